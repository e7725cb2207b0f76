// This file merges an adapter into its base: W' = W + scale·B·A, each merged weight written
// back in the base weight's dtype.
package lora

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// Delta adds scale·B·A (row-major [out, in]) to w, the weight's f32 values.
func (p *Pair) Delta(w []float32) {
	for o := 0; o < p.Out; o++ {
		row := w[o*p.In : (o+1)*p.In]
		b := p.B[o*p.Rank : (o+1)*p.Rank]
		for j, bj := range b {
			c := p.Scale * bj
			if c == 0 {
				continue
			}
			a := p.A[j*p.In : (j+1)*p.In]
			for i, av := range a {
				row[i] += c * av
			}
		}
	}
}

// MergeTensor returns w with p merged in, in w's dtype.
func MergeTensor(w *tensor.Tensor, p *Pair) (*tensor.Tensor, error) {
	if len(w.Shape) != 2 || w.Shape[0] != p.Out || w.Shape[1] != p.In {
		return nil, fmt.Errorf("lora: %s [%d %d] x %s [%d %d] does not fit the base's %s %v", p.SrcB, p.Out, p.Rank, p.SrcA, p.Rank, p.In, w.Name, w.Shape)
	}
	vals, err := w.Float32()
	if err != nil {
		return nil, fmt.Errorf("lora: %s: %w", w.Name, err)
	}
	vals = append([]float32(nil), vals...)
	p.Delta(vals)
	f := f32Tensor(w.Name, append([]int(nil), w.Shape...), vals)
	if w.Type == tensor.F32 {
		return f, nil
	}
	out, err := tensor.Convert(f, w.Type)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	return out, nil
}

// Merge returns a copy of the weight map ws with every weight a adapts merged (the others
// shared with ws).
func Merge(ws map[string]*tensor.Tensor, a *Adapter, path string) (map[string]*tensor.Tensor, error) {
	if err := Check(a, path, ws); err != nil {
		return nil, err
	}
	out := make(map[string]*tensor.Tensor, len(ws))
	for k, v := range ws {
		out[k] = v
	}
	for _, n := range a.Names() {
		m, err := MergeTensor(ws[n], a.Pairs[n])
		if err != nil {
			return nil, err
		}
		out[n] = m
	}
	return out, nil
}
