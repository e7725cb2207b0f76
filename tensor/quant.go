// This file implements QuantizeRow: the reference encoders for the float types and the
// 32-element block types Q8_0 and Q4_0. They reproduce llama.cpp's quantize_row_q8_0_ref and
// quantize_row_q4_0_ref bit for bit (float32 arithmetic in the same order, same rounding), so a
// GGUF quantized here is byte-identical to llama-quantize's output. K-quants: quant_k.go.
package tensor

import (
	"encoding/binary"
	"fmt"
	"math"
)

// QuantizeRow encodes src as type dt into dst. len(src) must be a multiple of the block size
// and dst must have exactly the size of that many elements.
func QuantizeRow(dt DType, src []float32, dst []byte) error {
	if err := checkRow(dt, len(dst), len(src)); err != nil {
		return err
	}
	switch dt {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	case Q8_0:
		quantQ8_0(src, dst)
	case Q4_0:
		quantQ4_0(src, dst)
	case Q4_K:
		quantQ4_K(src, dst)
	case Q6_K:
		quantQ6_K(src, dst)
	default:
		return fmt.Errorf("quantize: unsupported dtype %s", dt)
	}
	return nil
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// roundf is C's roundf: halves away from zero.
func roundf(v float32) float32 { return float32(math.Round(float64(v))) }

// quantQ8_0: d = amax/127, q = roundf(x/d) (computed as x*(1/d)).
func quantQ8_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*34 : b*34+34]
		var amax float32
		for _, v := range x {
			if a := abs32(v); a > amax {
				amax = a
			}
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for j, v := range x {
			blk[2+j] = byte(int8(roundf(v * id)))
		}
	}
}

// quantQ4_0: d = max/-8 where max is the element of largest magnitude (first one on ties);
// q = min(15, trunc(x/d + 8.5)).
func quantQ4_0(src []float32, dst []byte) {
	for b := 0; b < len(src)/32; b++ {
		x := src[b*32 : b*32+32]
		blk := dst[b*18 : b*18+18]
		var amax, max float32
		for _, v := range x {
			if a := abs32(v); amax < a {
				amax, max = a, v
			}
		}
		d := max / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for j := 0; j < 16; j++ {
			x0 := float32(x[j] * id)
			x1 := float32(x[j+16] * id)
			blk[2+j] = q4nibble(x0) | q4nibble(x1)<<4
		}
	}
}

func q4nibble(v float32) byte {
	q := int8(int32(v + 8.5)) // C's (int8_t) conversion truncates toward zero
	if q > 15 {
		q = 15
	}
	return byte(q)
}
