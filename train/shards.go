// This file implements how a distributed run's state maps onto the one-process checkpoint:
// every full tensor (param., adam_m., adam_v. + GGUF name, docs/formats/checkpoint.md) is a
// statePart that says which of its elements this rank owns and where they live locally. Each
// parallel mode adds its rule here (tensor parallel: nn's shard of the tensor; data parallel:
// one replica owns; ZeRO: the DP rank owning that range of the flat buffer owns the moments;
// pipeline: the stage holding the unit). Saving sums every rank's owned elements into a zeroed
// full tensor on rank 0 (each element has exactly one owner, so the sum is exact); restoring
// has every rank read the whole checkpoint and take its part, so any run resumes under any grid.
package train

import (
	"fmt"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

// statePart is one full tensor of the checkpoint and this rank's part of it.
type statePart struct {
	name  string
	shape []int                // full shape
	put   func(full []float32) // adds the elements this rank owns into full (zeroed by the caller)
	take  func(full []float32) // copies this rank's part of full (the whole tensor) into storage
}

// stateParts lists the checkpoint's tensors in the whole model's Params order (the same list
// on every rank, whatever it holds): param., then (with moments) adam_m. and adam_v. of each.
func (t *Trainer) stateParts(moments bool) []statePart {
	shapes, names := nn.TrainedShapes(&t.Model), modelTensorNames(t.Model)
	if t.Net.Adapted() { // an adapter's run: its A and B matrices only (the base is not trained)
		shapes, names = map[string][]int{}, nil
		for _, p := range t.Net.Params() {
			shapes[p.Name], names = p.Shape, append(names, p.Name)
		}
	}
	tpRank, tpSize := t.Net.TP()
	z := t.par.zero
	held := map[string]int{}
	for i, p := range t.Net.Params() {
		held[p.Name] = i
	}
	var out []statePart
	for _, name := range names {
		full := shapes[name]
		i, ok := held[name]
		if !ok { // another pipeline stage's tensor: nothing to put or take here
			none := statePart{shape: full, put: func([]float32) {}, take: func([]float32) {}}
			pres := []string{"param."}
			if moments {
				pres = append(pres, "adam_m.", "adam_v.")
			}
			for _, pre := range pres {
				none.name = pre + name
				out = append(out, none)
			}
			continue
		}
		p := t.Net.Params()[i]
		// One copy of each element is written: tensor-parallel ranks leave replicated tensors
		// (norms) to TP rank 0, the last pipeline stage leaves a tied token_embd to the first,
		// and data-parallel replicas leave it to DP rank 0 unless ZeRO gives each element one
		// DP owner.
		tpOwner := (nn.SplitOf(p.Name) != nn.Replicated || tpRank == 0) &&
			(t.par.pipe == nil || t.par.pipe.owns(p.Name))
		dense := func(name string, store []float32) statePart {
			owner := tpOwner && t.par.dpRank() == 0
			return statePart{name: name, shape: full,
				put: func(dst []float32) {
					if owner {
						nn.Unshard(dst, store, p.Name, full, tpRank, tpSize)
					}
				},
				take: func(src []float32) { nn.Shard(store, src, p.Name, full, tpRank, tpSize) }}
		}
		sharded := func(name string, sb []float32) statePart {
			sp := t.shardedPart(i, p, full, tpOwner, sb)
			sp.name = name
			return sp
		}
		if z != nil && z.Stage == 3 {
			out = append(out, sharded("param."+p.Name, z.WeightShards()))
		} else {
			out = append(out, dense("param."+p.Name, p.W))
		}
		if !moments {
			continue
		}
		if z != nil {
			out = append(out, sharded("adam_m."+p.Name, t.opt.M), sharded("adam_v."+p.Name, t.opt.V))
			continue
		}
		w, _ := t.Net.Flat()
		lo := offsetIn(w, p.W)
		out = append(out, dense("adam_m."+p.Name, t.opt.M[lo:lo+len(p.W)]), dense("adam_v."+p.Name, t.opt.V[lo:lo+len(p.W)]))
	}
	return out
}

// modelTensorNames are the whole model's tensors in Params order.
func modelTensorNames(mc model.Config) []string {
	units, _ := nn.Units(mc, nn.Options{}) // the whole model: no error for a valid config
	var names []string
	for _, u := range units {
		for _, p := range u.Params {
			names = append(names, p.Name)
		}
	}
	return names
}

// gather assembles the full tensors of parts on world rank 0 (every rank calls it; the others
// get nil). A failed collective is an error.
func (t *Trainer) gather(parts []statePart) ([]namedF32, error) {
	var out []namedF32
	var world *comm.Group
	if t.par.mesh != nil {
		world = t.par.mesh.World
	}
	for _, p := range parts {
		full := make([]float32, product(p.shape))
		p.put(full)
		if world != nil {
			if err := world.Reduce(full, 0, comm.Sum); err != nil {
				return nil, fmt.Errorf("train: gathering %s: %w", p.name, err)
			}
		}
		if t.par.writes() {
			out = append(out, namedF32{p.name, p.shape, full})
		}
	}
	return out, nil
}
