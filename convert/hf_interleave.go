// This file writes the tensors a family's Hugging Face form fuses (model.Family.HFInterleaved:
// gpt-oss's gate_up_proj): the pair joined, then the family's ToHFTensor on the joined tensor.
package convert

import (
	"fmt"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// interleavedOut returns, for t, the joined tensor to write when t is the first of a fused
// pair, skip when t is the second (written with the first), and neither otherwise.
func interleavedOut(fam *model.Family, c *model.Config, p *Plan, t *Tensor, dt tensor.DType, hfShapes map[string][]int) (*outTensor, bool, error) {
	var l int
	var suffix string
	if n, _ := fmt.Sscanf(t.Name, "blk.%d.%s", &l, &suffix); n != 2 {
		return nil, false, nil
	}
	for fused, pair := range fam.HFInterleaved {
		switch suffix {
		case pair[1]:
			return nil, true, nil
		case pair[0]:
		default:
			continue
		}
		pre := fmt.Sprintf("blk.%d.", l)
		var other *Tensor
		for i := range p.Tensors {
			if p.Tensors[i].Name == pre+pair[1] {
				other = &p.Tensors[i]
			}
		}
		name, ok := fam.Names.HF(pre + fused)
		if other == nil || !ok {
			return nil, false, fmt.Errorf("convert: %s: its pair %s or the fused Hugging Face name is missing", t.Name, pre+pair[1])
		}
		shape, ok := hfShapes[pre+fused]
		if !ok {
			return nil, false, fmt.Errorf("convert: %s: no Hugging Face shape for %s", t.Name, pre+fused)
		}
		var transform model.TensorFunc
		if fam.ToHFTensor != nil {
			transform = fam.ToHFTensor(c, pre+fused)
		}
		joined := &Tensor{Name: pre + fused, Type: t.Type, Load: func() (*tensor.Tensor, error) {
			a, err := t.Load()
			if err != nil {
				return nil, err
			}
			b, err := other.Load()
			if err != nil {
				return nil, err
			}
			if a.Type != b.Type {
				if b, err = tensor.Convert(b, a.Type); err != nil {
					return nil, err
				}
			}
			return model.JoinInterleaved(pre+fused, a, b)
		}}
		return &outTensor{Name: name, Type: dt, Shape: shape, Gen: converted(joined, dt, transform)}, false, nil
	}
	return nil, false, nil
}
