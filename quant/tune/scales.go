// Package tune fine-tunes the block scales of a quantized model so that it reproduces the
// float model it was made from: every quantization block keeps its integer codes (and, for
// the K-quants, its 6-bit or 8-bit sub-block scales), and only the block's float16 scale d (and
// Q4_K's dmin) moves, by gradient descent on the Kullback-Leibler divergence from the float
// model's next-token distributions over calibration text. It is the end-to-end scale training
// of EfficientQAT (Chen et al., 2024) with the original model as the teacher, on the GGUF block
// formats: the result is the same file format, read by every kernel and by llama.cpp.
//
// This file holds the block formats: where each type keeps its scales, and the dequantized
// weight written as d·A + dmin·B with A and B fixed by the codes.
package tune

import (
	"encoding/binary"
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// format is where a block type keeps its float16 scales.
type format struct {
	elems, bytes int
	dOff         int // offset of the f16 scale d in the block
	mOff         int // offset of the f16 dmin (subtracted scale), -1 without one
}

var formats = map[tensor.DType]format{
	tensor.Q4_K: {256, 144, 0, 2},
	tensor.Q6_K: {256, 210, 208, -1},
	tensor.Q4_0: {32, 18, 0, -1},
	tensor.Q8_0: {32, 34, 0, -1},
}

// Tunable reports whether dt's block scales can be tuned.
func Tunable(dt tensor.DType) bool {
	_, ok := formats[dt]
	return ok
}

// Quantized is one block-quantized matrix whose scales are tuned in place.
type Quantized struct {
	Type tensor.DType
	Data []byte // rows of blocks, tensor.Type's layout; Apply rewrites the scales here
}

// blocks is a Quantized matrix as d·A + m·B per block: A is the block dequantized with d = 1 and
// dmin = 0, B with d = 0 and dmin = 1 (nil without dmin), d0 and m0 the stored scales.
type blocks struct {
	q      *Quantized
	f      format
	a, b   []float32
	d0, m0 []float32
}

func newBlocks(q *Quantized, n int) (*blocks, error) {
	f, ok := formats[q.Type]
	if !ok {
		return nil, fmt.Errorf("tune: %s scales cannot be tuned (Q4_K, Q6_K, Q4_0, Q8_0)", q.Type)
	}
	if n%f.elems != 0 || len(q.Data) != n/f.elems*f.bytes {
		return nil, fmt.Errorf("tune: %d %s bytes for %d elements", len(q.Data), q.Type, n)
	}
	nb := n / f.elems
	bl := &blocks{q: q, f: f, a: make([]float32, n), d0: make([]float32, nb)}
	if f.mOff >= 0 {
		bl.b, bl.m0 = make([]float32, n), make([]float32, nb)
	}
	one, zero := tensor.F32ToF16(1), tensor.F32ToF16(0)
	blk := make([]byte, f.bytes)
	for i := range nb {
		src := q.Data[i*f.bytes : (i+1)*f.bytes]
		copy(blk, src)
		bl.d0[i] = tensor.F16ToF32(binary.LittleEndian.Uint16(src[f.dOff:]))
		binary.LittleEndian.PutUint16(blk[f.dOff:], one)
		if f.mOff >= 0 {
			bl.m0[i] = tensor.F16ToF32(binary.LittleEndian.Uint16(src[f.mOff:]))
			binary.LittleEndian.PutUint16(blk[f.mOff:], zero)
		}
		if err := tensor.DequantizeRow(q.Type, blk, bl.a[i*f.elems:(i+1)*f.elems]); err != nil {
			return nil, err
		}
		if f.mOff >= 0 {
			binary.LittleEndian.PutUint16(blk[f.dOff:], zero)
			binary.LittleEndian.PutUint16(blk[f.mOff:], one)
			if err := tensor.DequantizeRow(q.Type, blk, bl.b[i*f.elems:(i+1)*f.elems]); err != nil {
				return nil, err
			}
		}
	}
	return bl, nil
}

// half rounds v to the nearest float16, as the file stores it.
func half(v float32) float32 { return tensor.F16ToF32(tensor.F32ToF16(v)) }

// scales returns block i's scales for the relative factors td, tm (1: the stored ones), rounded
// to float16 as the file will hold them.
func (bl *blocks) scales(i int, td, tm float32) (d, m float32) {
	d = half(bl.d0[i] * td)
	if bl.m0 != nil {
		m = half(bl.m0[i] * tm)
	}
	return d, m
}

// weights writes the dequantized matrix for the factors into w.
func (bl *blocks) weights(w []float32, td, tm []float32) {
	e := bl.f.elems
	for i := range bl.d0 {
		d, m := bl.scales(i, td[i], factor(tm, i))
		a, out := bl.a[i*e:(i+1)*e], w[i*e:(i+1)*e]
		if bl.b == nil {
			for j := range out {
				out[j] = d * a[j]
			}
			continue
		}
		b := bl.b[i*e : (i+1)*e]
		for j := range out {
			out[j] = d*a[j] + m*b[j]
		}
	}
}

func factor(t []float32, i int) float32 {
	if t == nil {
		return 1
	}
	return t[i]
}

// grads accumulates d(loss)/d(factor) per block from the weights' gradient g: the chain rule
// through w = d0·td·A + m0·tm·B.
func (bl *blocks) grads(g []float32, gd, gm []float32) {
	e := bl.f.elems
	for i := range bl.d0 {
		var sa, sb float64
		a, gi := bl.a[i*e:(i+1)*e], g[i*e:(i+1)*e]
		for j := range gi {
			sa += float64(gi[j] * a[j])
		}
		gd[i] += float32(sa) * bl.d0[i]
		if bl.b != nil {
			b := bl.b[i*e : (i+1)*e]
			for j := range gi {
				sb += float64(gi[j] * b[j])
			}
			gm[i] += float32(sb) * bl.m0[i]
		}
	}
}

// apply writes the tuned scales into the blocks' bytes.
func (bl *blocks) apply(td, tm []float32) {
	for i := range bl.d0 {
		d, m := bl.scales(i, td[i], factor(tm, i))
		blk := bl.q.Data[i*bl.f.bytes : (i+1)*bl.f.bytes]
		binary.LittleEndian.PutUint16(blk[bl.f.dOff:], tensor.F32ToF16(d))
		if bl.m0 != nil {
			binary.LittleEndian.PutUint16(blk[bl.f.mOff:], tensor.F32ToF16(m))
		}
	}
}
