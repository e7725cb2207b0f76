// This file packs a Linear (integer codes, scales, zeros per group) into AWQ's or GPTQ's
// tensors, and quantizes float weights to a Linear by round to nearest (asymmetric, per
// group). Pack takes any codes, so a calibrated quantizer (AWQ's scale search, GPTQ's
// column updates) can feed its results to the same writer.
package hfquant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/tensor"
)

// Pack returns the tensors of the linear prefix (prefix.qweight, .qzeros, .scales, and for
// GPTQ .g_idx) holding l in c's layout. l.Bits and l.Group must match c; scales are written
// as fp16 (so they should be fp16 values already); zeros must fit the stored field (0..2^bits−1,
// and 1..2^bits for GPTQ's v1 format, which stores z−1).
func Pack(c *Config, prefix string, l *Linear) ([]tensor.Tensor, error) {
	group := c.GroupSize
	if group < 0 {
		group = l.In
	}
	if l.Bits != c.Bits || l.Group != group {
		return nil, fmt.Errorf("hfquant: %s: linear has %d bits, groups of %d; quantization_config has bits = %d, group_size = %d", prefix, l.Bits, l.Group, c.Bits, c.GroupSize)
	}
	if c.Method == "awq" && l.GIdx != nil {
		return nil, fmt.Errorf("hfquant: %s: AWQ has no g_idx (act-order); quantize without reordering", prefix)
	}
	per := 32 / l.Bits
	ng := l.Groups()
	if l.Out%per != 0 || (c.Method == "awq" && l.Out%8 != 0) || l.In%per != 0 || ng*l.Out != len(l.Scales) || len(l.Zeros) != len(l.Scales) {
		return nil, fmt.Errorf("hfquant: %s: [%d %d] with %d groups cannot be packed %d per int32", prefix, l.Out, l.In, ng, per)
	}
	maxq := int32(1)<<l.Bits - 1
	off := int32(0)
	if c.V1Zeros() {
		off = 1
	}
	for i, z := range l.Zeros {
		if z-off < 0 || z-off > maxq {
			return nil, fmt.Errorf("hfquant: %s: zero %d (group %d, out %d) does not fit %s's stored zeros (0..%d, stored as zero-%d)",
				prefix, z, i/l.Out, i%l.Out, c.Method, maxq, off)
		}
	}
	scales := tensor.Tensor{Name: prefix + ".scales", Type: tensor.F16, Shape: []int{ng, l.Out}, Data: make([]byte, 2*ng*l.Out)}
	for i, s := range l.Scales {
		binary.LittleEndian.PutUint16(scales.Data[2*i:], tensor.F32ToF16(s))
	}
	put := func(b []byte, i int, v uint32) { binary.LittleEndian.PutUint32(b[4*i:], v) }
	if c.Method == "awq" {
		w8 := l.Out / 8
		qw := tensor.Tensor{Name: prefix + ".qweight", Type: tensor.I32, Shape: []int{l.In, w8}, Data: make([]byte, 4*l.In*w8)}
		for i := 0; i < l.In; i++ {
			for cw := 0; cw < w8; cw++ {
				var v uint32
				for n := 0; n < 8; n++ {
					v |= uint32(l.Codes[(cw*8+awqOrder[n])*l.In+i]&15) << (4 * n)
				}
				put(qw.Data, i*w8+cw, v)
			}
		}
		qz := tensor.Tensor{Name: prefix + ".qzeros", Type: tensor.I32, Shape: []int{ng, w8}, Data: make([]byte, 4*ng*w8)}
		for g := 0; g < ng; g++ {
			for cw := 0; cw < w8; cw++ {
				var v uint32
				for n := 0; n < 8; n++ {
					v |= uint32(l.Zeros[g*l.Out+cw*8+awqOrder[n]]) << (4 * n)
				}
				put(qz.Data, g*w8+cw, v)
			}
		}
		return []tensor.Tensor{qw, qz, scales}, nil
	}
	rows, zw := l.In/per, l.Out/per
	qw := tensor.Tensor{Name: prefix + ".qweight", Type: tensor.I32, Shape: []int{rows, l.Out}, Data: make([]byte, 4*rows*l.Out)}
	for r := 0; r < rows; r++ {
		for o := 0; o < l.Out; o++ {
			var v uint32
			for n := 0; n < per; n++ {
				v |= uint32(l.Codes[o*l.In+r*per+n]) << (l.Bits * n)
			}
			put(qw.Data, r*l.Out+o, v)
		}
	}
	qz := tensor.Tensor{Name: prefix + ".qzeros", Type: tensor.I32, Shape: []int{ng, zw}, Data: make([]byte, 4*ng*zw)}
	for g := 0; g < ng; g++ {
		for cw := 0; cw < zw; cw++ {
			var v uint32
			for n := 0; n < per; n++ {
				v |= uint32(l.Zeros[g*l.Out+cw*per+n]-off) << (l.Bits * n)
			}
			put(qz.Data, g*zw+cw, v)
		}
	}
	gi := tensor.Tensor{Name: prefix + ".g_idx", Type: tensor.I32, Shape: []int{l.In}, Data: make([]byte, 4*l.In)}
	for i := 0; i < l.In; i++ {
		put(gi.Data, i, uint32(l.GroupOf(i)))
	}
	return []tensor.Tensor{qw, qz, scales, gi}, nil
}

// RTN quantizes w [out, in] to bits per value by round to nearest, asymmetric, one fp16
// scale and integer zero per group of group input columns (group ≤ 0: one group per row):
// s = (max−min)/(2^bits−1) rounded to fp16 (at least 1e-5), z = round(−min/s) clamped to
// [minZero, 2^bits−1], q = clamp(round(w/s) + z). minZero is 1 for GPTQ's v1 format (which
// cannot store zero 0), else 0.
func RTN(w []float32, out, in, bits, group, minZero int) (*Linear, error) {
	if group <= 0 {
		group = in
	}
	if in%group != 0 || len(w) != out*in || bits < 2 || bits > 8 {
		return nil, fmt.Errorf("hfquant: cannot quantize [%d %d] (%d values) to %d bits in groups of %d", out, in, len(w), bits, group)
	}
	ng := in / group
	l := &Linear{Out: out, In: in, Bits: bits, Group: group, Codes: make([]uint8, out*in),
		Scales: make([]float32, ng*out), Zeros: make([]int32, ng*out)}
	for o := 0; o < out; o++ {
		for g := 0; g < ng; g++ {
			v := w[o*in+g*group : o*in+(g+1)*group]
			s, z := GroupParams(v, bits, minZero)
			l.Scales[g*out+o], l.Zeros[g*out+o] = s, z
			for j, x := range v {
				l.Codes[o*in+g*group+j] = Code(x, s, z, bits)
			}
		}
	}
	return l, nil
}

// GroupParams is the round-to-nearest grid of one group of values v at bits per value: the
// fp16 scale s = (max−min)/(2^bits−1) (at least 1e-5) and the zero z = round(−min/s) clamped
// to [minZero, 2^bits−1].
func GroupParams(v []float32, bits, minZero int) (s float32, z int32) {
	maxq := float64(int(1)<<bits - 1)
	lo, hi := float64(v[0]), float64(v[0])
	for _, x := range v {
		lo, hi = min(lo, float64(x)), max(hi, float64(x))
	}
	sd := float64(tensor.F16ToF32(tensor.F32ToF16(float32(max((hi-lo)/maxq, 1e-5)))))
	zd := math.Max(float64(minZero), math.Min(maxq, math.RoundToEven(-lo/sd)))
	return float32(sd), int32(zd)
}

// Code is x's nearest code on the grid (s, z): clamp(round(x/s) + z, 0, 2^bits−1).
func Code(x, s float32, z int32, bits int) uint8 {
	maxq := float64(int(1)<<bits - 1)
	return uint8(math.Max(0, math.Min(maxq, math.RoundToEven(float64(x)/float64(s))+float64(z))))
}
