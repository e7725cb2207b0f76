// This file unpacks one quantized linear's AWQ or GPTQ tensors into Linear (codes, scales,
// zeros, group of each input column), checking every tensor against quantization_config and
// the others; a disagreement names the config field and the tensor with its shape.
package hfquant

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/llmcloud/llmcloud/tensor"
)

// Linear is one quantized linear layer, unpacked: w[o][i] = Scales[g][o]·(Codes[o][i] −
// Zeros[g][o]) with g = GIdx[i] (or i/Group when GIdx is nil).
type Linear struct {
	Out, In int
	Bits    int
	Group   int       // input columns per group (In for one group per row)
	Codes   []uint8   // [Out][In], 0 .. 2^Bits−1
	Scales  []float32 // [groups][Out]
	Zeros   []int32   // [groups][Out], the zero point itself (0 .. 2^Bits; v1's z−1 already undone)
	GIdx    []int32   // [In] group of each input column; nil: i/Group
}

// Groups is the number of groups.
func (l *Linear) Groups() int { return len(l.Scales) / max(l.Out, 1) }

// GroupOf is the group of input column i.
func (l *Linear) GroupOf(i int) int {
	if l.GIdx != nil {
		return int(l.GIdx[i])
	}
	return i / l.Group
}

// Float32 returns the dequantized weight [Out, In].
func (l *Linear) Float32() []float32 {
	w := make([]float32, l.Out*l.In)
	for o := 0; o < l.Out; o++ {
		for i := 0; i < l.In; i++ {
			g := l.GroupOf(i)
			w[o*l.In+i] = l.Scales[g*l.Out+o] * float32(int32(l.Codes[o*l.In+i])-l.Zeros[g*l.Out+o])
		}
	}
	return w
}

// Parts are a linear's packed tensors (GIdx may be nil).
type Parts struct {
	Prefix                  string // e.g. "model.layers.0.self_attn.q_proj"
	QWeight, QZeros, Scales *tensor.Tensor
	GIdx                    *tensor.Tensor
}

// Shape checks the parts against c and each other and returns the weight's [out, in].
func Shape(c *Config, p *Parts) (out, in int, err error) {
	for _, t := range []*tensor.Tensor{p.QWeight, p.QZeros, p.Scales} {
		if t == nil {
			return 0, 0, fmt.Errorf("quantized linear %s: missing one of .qweight, .qzeros, .scales (quantization_config.quant_method %s)", p.Prefix, c.Method)
		}
		if len(t.Shape) != 2 {
			return 0, 0, fmt.Errorf("tensor %s has shape %v, want 2-D (quantization_config.quant_method %s)", t.Name, t.Shape, c.Method)
		}
	}
	for _, t := range []*tensor.Tensor{p.QWeight, p.QZeros} {
		if t.Type != tensor.I32 {
			return 0, 0, fmt.Errorf("tensor %s is %s %v, want I32 (quantization_config.quant_method %s packs int32 words)", t.Name, t.Type, t.Shape, c.Method)
		}
	}
	if s := p.Scales.Type; s != tensor.F16 && s != tensor.BF16 && s != tensor.F32 {
		return 0, 0, fmt.Errorf("tensor %s is %s %v, want F16 scales", p.Scales.Name, s, p.Scales.Shape)
	}
	per := 32 / c.Bits
	qw, qz, sc := p.QWeight.Shape, p.QZeros.Shape, p.Scales.Shape
	if c.Method == "awq" {
		in, out = qw[0], sc[1]
		if qw[1]*per != out {
			return 0, 0, fmt.Errorf("tensor %s has shape %v: with quantization_config.bits = %d (%d values per int32 along out) it holds %d out columns, but %s %v has %d",
				p.QWeight.Name, qw, c.Bits, per, qw[1]*per, p.Scales.Name, sc, out)
		}
	} else {
		in, out = qw[0]*per, qw[1]
		if sc[1] != out {
			return 0, 0, fmt.Errorf("tensor %s has shape %v (%d out columns) but %s has shape %v (%d)", p.QWeight.Name, qw, out, p.Scales.Name, sc, sc[1])
		}
		if p.GIdx != nil && (len(p.GIdx.Shape) != 1 || p.GIdx.Shape[0] != in) {
			return 0, 0, fmt.Errorf("tensor %s has shape %v: with quantization_config.bits = %d (%d values per int32 along in) it holds %d input columns, but %s has shape %v",
				p.QWeight.Name, qw, c.Bits, per, in, p.GIdx.Name, p.GIdx.Shape)
		}
	}
	groups := 1
	if c.GroupSize > 0 {
		groups = (in + c.GroupSize - 1) / c.GroupSize
	}
	if sc[0] != groups {
		return 0, 0, fmt.Errorf("tensor %s has shape %v: %d groups, but quantization_config.group_size = %d makes %d groups of the %d input columns of %s %v",
			p.Scales.Name, sc, sc[0], c.GroupSize, groups, in, p.QWeight.Name, qw)
	}
	if !slices.Equal(qz, []int{groups, out / per}) || out%per != 0 {
		return 0, 0, fmt.Errorf("tensor %s has shape %v, want [%d %d] (quantization_config.bits = %d, group_size = %d, %d out columns)",
			p.QZeros.Name, qz, groups, out/per, c.Bits, c.GroupSize, out)
	}
	if c.Method == "awq" && c.GroupSize > 0 && in%c.GroupSize != 0 {
		return 0, 0, fmt.Errorf("tensor %s has shape %v: %d input columns is not a multiple of quantization_config.group_size = %d", p.QWeight.Name, qw, in, c.GroupSize)
	}
	return out, in, nil
}

func word(t *tensor.Tensor, i int) uint32 { return binary.LittleEndian.Uint32(t.Data[4*i:]) }

// awqOrder[p] is the out column (within its 8) held by nibble p of an AWQ word.
var awqOrder = [8]int{0, 2, 4, 6, 1, 3, 5, 7}

// Unpack checks and unpacks one linear.
func Unpack(c *Config, p *Parts) (*Linear, error) {
	out, in, err := Shape(c, p)
	if err != nil {
		return nil, err
	}
	for _, t := range []*tensor.Tensor{p.QWeight, p.QZeros, p.Scales, p.GIdx} {
		if t != nil {
			if err := t.Check(); err != nil {
				return nil, err
			}
		}
	}
	groups := p.Scales.Shape[0]
	l := &Linear{Out: out, In: in, Bits: c.Bits, Group: c.GroupSize,
		Codes: make([]uint8, out*in), Zeros: make([]int32, groups*out)}
	if c.GroupSize < 0 {
		l.Group = in
	}
	if l.Scales, err = p.Scales.Float32(); err != nil {
		return nil, err
	}
	bits, mask, per := uint(c.Bits), uint32(1)<<c.Bits-1, 32/c.Bits
	v1 := int32(0)
	if c.V1Zeros() {
		v1 = 1
	}
	if c.Method == "awq" {
		w8 := out / 8
		for i := 0; i < in; i++ {
			for cw := 0; cw < w8; cw++ {
				v := word(p.QWeight, i*w8+cw)
				for n := 0; n < 8; n++ {
					l.Codes[(cw*8+awqOrder[n])*in+i] = uint8(v >> (4 * uint(n)) & 0xf)
				}
			}
		}
		for g := 0; g < groups; g++ {
			for cw := 0; cw < w8; cw++ {
				v := word(p.QZeros, g*w8+cw)
				for n := 0; n < 8; n++ {
					l.Zeros[g*out+cw*8+awqOrder[n]] = int32(v >> (4 * uint(n)) & 0xf)
				}
			}
		}
		if !c.ZeroPoint { // symmetric AWQ: zero 2^(bits-1) whatever qzeros holds
			for i := range l.Zeros {
				l.Zeros[i] = 1 << (c.Bits - 1)
			}
		}
		return l, nil
	}
	for r := 0; r < in/per; r++ {
		for o := 0; o < out; o++ {
			v := word(p.QWeight, r*out+o)
			for n := 0; n < per; n++ {
				l.Codes[o*in+r*per+n] = uint8(v >> (bits * uint(n)) & mask)
			}
		}
	}
	zw := out / per
	for g := 0; g < groups; g++ {
		for cw := 0; cw < zw; cw++ {
			v := word(p.QZeros, g*zw+cw)
			for n := 0; n < per; n++ {
				l.Zeros[g*out+cw*per+n] = int32(v>>(bits*uint(n))&mask) + v1
			}
		}
	}
	if p.GIdx != nil {
		if p.GIdx.Type != tensor.I32 {
			return nil, fmt.Errorf("tensor %s is %s %v, want I32", p.GIdx.Name, p.GIdx.Type, p.GIdx.Shape)
		}
		l.GIdx = make([]int32, in)
		trivial := true
		for i := range l.GIdx {
			g := int32(word(p.GIdx, i))
			if g < 0 || int(g) >= groups {
				return nil, fmt.Errorf("tensor %s %v: g_idx[%d] = %d is outside the %d groups of quantization_config.group_size = %d", p.GIdx.Name, p.GIdx.Shape, i, g, groups, c.GroupSize)
			}
			l.GIdx[i] = g
			trivial = trivial && int(g) == i/l.Group
		}
		if trivial {
			l.GIdx = nil
		}
	}
	return l, nil
}
