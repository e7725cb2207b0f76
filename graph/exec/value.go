// This file lets a caller read an intermediate value of the last Run by name (the serving
// path reads the model's final-norm rows, the hidden states a learned draft head drafts
// from), when no later node's result is planned into the same buffer.
package exec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// Lookup returns the id of the f32 value named name, for Data, if its rows survive a Run:
// no node after the value's definition writes into its buffer slot.
func (p *Program) Lookup(name string) (int, error) {
	id := -1
	for i, x := range p.vals {
		if x.v.Name == name {
			id = i
			break
		}
	}
	if id < 0 {
		return -1, fmt.Errorf("exec: %s has no value %s", p.g.Name, name)
	}
	x := p.vals[id]
	if x.slot < 0 || x.v.Type.DType != tensor.F32 {
		return -1, fmt.Errorf("exec: value %s is not an f32 result", name)
	}
	if id == p.out {
		return id, nil
	}
	defined := false
	for _, n := range p.nodes {
		for _, o := range n.Outs {
			switch {
			case o == x.v:
				defined = true
			case defined && p.vals[p.ids[o]].slot == x.slot:
				return -1, fmt.Errorf("exec: value %s is overwritten by %s during a run", name, n.Name())
			}
		}
	}
	return id, nil
}

// Data is the value id's rows from the last Run (valid until the next Run; nil before the
// first).
func (p *Program) Data(id int) []float32 { return p.vals[id].data }
