// This file checks tensor parallelism inside pipeline stages (pp2 x tp2 in one process): two
// stages of two tensor-parallel ranks each, every TP group an in-memory group, activations
// and input gradients passed from TP rank r of one stage to TP rank r of the next, give the
// whole model's losses and each rank's gradient shards (the tied embedding's first- and
// last-stage copies summed, as the trainer's embedding group does) within 1e-5 relative.
package nn

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

func TestTPStages(t *testing.T) {
	const B, T, M, TP = 2, 5, 2, 2
	const lossScale = 1.0 / M
	for _, tied := range []bool{true, false} {
		cfg := tpConfig(tied)
		batches := testBatches(cfg, B, T, M)
		want, whole := flatRun(t, cfg, B, T, batches)
		shapes := cfg.Shapes()
		byName := func(name string) Param {
			return whole.Params()[slices.IndexFunc(whole.Params(), func(q Param) bool { return q.Name == name })]
		}
		split := []int{0, 1, cfg.Layers}
		stages := make([][]*Model, len(split)-1) // stages[s][tp rank]
		for s := range stages {
			g := newMemGroup(TP)
			for r := range TP {
				m, err := NewWith(cfg, B, T, kernels.NewPool(1), Options{TP: memRank{g, r}, FirstBlock: split[s], EndBlock: split[s+1]})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range m.Params() {
					Shard(p.W, byName(p.Name).W, p.Name, shapes[p.Name], r, TP)
				}
				stages[s] = append(stages[s], m)
			}
		}
		name := fmt.Sprintf("tied=%v pp2 x tp2", tied)
		for mb, b := range batches {
			outs, dins, losses := make([][]float32, TP), make([][]float32, TP), make([]float32, TP)
			onAll(stages[0], func(r int, m *Model) {
				out, _, err := m.StageForward(0, b[0], nil, nil, B, T)
				if err != nil {
					t.Error(err)
				}
				outs[r] = slices.Clone(out)
			})
			onAll(stages[1], func(r int, m *Model) {
				_, loss, err := m.StageForward(0, nil, b[1], outs[r], B, T)
				if err != nil {
					t.Error(err)
				}
				din, err := m.StageBackward(0, nil, lossScale)
				if err != nil {
					t.Error(err)
				}
				losses[r], dins[r] = loss, slices.Clone(din)
			})
			onAll(stages[0], func(r int, m *Model) {
				if _, err := m.StageBackward(0, dins[r], lossScale); err != nil {
					t.Error(err)
				}
			})
			for r, l := range losses {
				if d := math.Abs(float64(l-want[mb])) / float64(want[mb]); d > 1e-5 {
					t.Errorf("%s micro-batch %d, TP rank %d: loss %g, whole model %g", name, mb, r, l, want[mb])
				}
			}
		}
		for r := range TP {
			got := map[string][]float32{} // gradient per tensor, copies summed
			for s := range stages {
				for _, p := range stages[s][r].Params() {
					if g, ok := got[p.Name]; ok {
						kernels.Add(g, p.G)
					} else {
						got[p.Name] = slices.Clone(p.G)
					}
				}
			}
			if len(got) != len(whole.Params()) {
				t.Errorf("%s rank %d: stages hold %d tensors, the whole model %d", name, r, len(got), len(whole.Params()))
			}
			for n, g := range got {
				w := make([]float32, len(g))
				Shard(w, byName(n).G, n, shapes[n], r, TP)
				kernels.Scale(w, lossScale)
				if d := maxRelDiff(g, w); d > 1e-5 {
					t.Errorf("%s rank %d: gradient of %s differs by %.2g relative", name, r, n, d)
				}
			}
		}
	}
}
