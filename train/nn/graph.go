// This file runs the model through the graph: model.BuildGraph with its loss and backward
// (a pipeline stage's part of it, sharded over the tensor-parallel group, recomputed per block
// with Options.Recompute; graph_stage.go holds the stage and slot entry points), compiled by
// graph/exec/trainexec over the model's own weight and gradient views. The hooks
// (Options.BeforeUse, GradReady) are called in the order documented in docs/training.md, from
// the weights each instruction reads and the gradients it writes.
package nn

import (
	"slices"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
)

// buildGraph compiles the model's graph over its parameters and lays out the hook calls.
func (m *Model) buildGraph() error {
	params := make([]trainexec.Param, len(m.params))
	unit := map[string]int{}
	for i, p := range m.params {
		params[i] = trainexec.Param{Name: p.Name, W: p.W, G: p.G}
		unit[p.Name] = p.unit
	}
	prog, err := m.buildSlots(params)
	if err != nil {
		return err
	}
	if m.opt.BeforeUse == nil && m.opt.GradReady == nil {
		return nil
	}
	nf, total := prog.Instructions()
	before, after := make([][]int, total), make([][]int, total)
	unitsOf := func(names []string) []int {
		var us []int
		for _, n := range names {
			if u, ok := unit[n]; ok {
				us = append(us, u)
			}
		}
		return us
	}
	// Forward: a unit each time the weights read move to another one.
	last := -1
	for i := 0; i < nf; i++ {
		r, _ := prog.Touches(i)
		for _, u := range unitsOf(r) {
			if u != last {
				before[i] = append(before[i], u)
				last = u
			}
		}
	}
	// Backward: each unit once, before it is first touched; the head's units (touched before
	// any block) together, the final norm's first; each ready after its last gradient write.
	first, lastW := map[int]int{}, map[int]int{}
	for i := nf; i < total; i++ {
		r, w := prog.Touches(i)
		for _, u := range append(unitsOf(r), unitsOf(w)...) {
			if _, ok := first[u]; !ok {
				first[u] = i
			}
		}
		for _, u := range unitsOf(w) {
			lastW[u] = i
		}
	}
	blockFirst := total
	for u, i := range first {
		if u >= 1 && u <= m.Cfg.Layers {
			blockFirst = min(blockFirst, i)
		}
	}
	var head []int
	headAt := total
	for u, i := range first {
		if i < blockFirst {
			head = append(head, u)
			headAt = min(headAt, i)
		}
	}
	slices.SortFunc(head, func(a, b int) int { return b - a }) // L+1, then 0
	for u, i := range first {
		if !slices.Contains(head, u) {
			before[i] = append(before[i], u)
		}
	}
	if len(head) > 0 {
		before[headAt] = append(head, before[headAt]...)
	}
	headReady := -1 // the head's units whose gradients are final before any block's are ready together
	for _, u := range head {
		if i, ok := lastW[u]; ok && i < blockFirst {
			headReady = max(headReady, i)
		}
	}
	for u, i := range lastW {
		if slices.Contains(head, u) && i < blockFirst {
			i = headReady
		}
		after[i] = append(after[i], u)
	}
	for i := range after {
		slices.SortFunc(after[i], func(a, b int) int { return b - a })
	}
	m.setHook(func(i int, done bool) {
		if done {
			for _, u := range after[i] {
				m.ready(u)
			}
			return
		}
		for _, u := range before[i] {
			m.use(u, i >= nf)
		}
	})
	return nil
}
