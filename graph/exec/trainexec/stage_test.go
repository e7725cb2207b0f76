// Tests of pipeline stages, slots and recomputation in the executor: two stages of a model,
// two slots each (GPipe order: both forwards, then both backwards), with and without
// recomputation, give the whole program's losses and, scaled by 1/2, its gradients bit for
// bit; recomputation plans less activation memory.
package trainexec_test

import (
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/kernels"
)

func TestStagesAndSlotsMatchWhole(t *testing.T) {
	cfg := tinyConfigs()["mha-untied"] // 3 blocks
	pool := kernels.NewPool(2)
	const B, T, M = 2, 7, 2
	_, whole, params := newPair(t, cfg, B, T, pool)
	r := rand.New(rand.NewPCG(5, 6))
	var batches [M][2][]int32
	var want [M]float32
	for mb := range batches {
		batches[mb][0], batches[mb][1] = batch(r, cfg.Vocab, B*T)
		want[mb] = whole.Forward(batches[mb][0], batches[mb][1], B, T)
		whole.Backward()
	}
	var bytes [2]int64
	for i, recompute := range []bool{false, true} {
		var stages [2][]*trainexec.Program
		var grads [2]map[string][]float32
		for s, span := range [][2]int{{0, 1}, {1, 3}} {
			grads[s] = map[string][]float32{}
			var ps []trainexec.Param
			for _, p := range params {
				g := make([]float32, len(p.G))
				grads[s][p.Name] = g
				ps = append(ps, trainexec.Param{Name: p.Name, W: p.W, G: g})
			}
			progs, err := trainexec.ForModelSlots(cfg, ps, B, T, pool, trainexec.Options{FirstBlock: span[0], EndBlock: span[1], Recompute: recompute}, M)
			if err != nil {
				t.Fatal(err)
			}
			stages[s] = progs
			bytes[i] += progs[0].SharedBytes()
			for _, p := range progs {
				bytes[i] += p.ActivationBytes()
			}
		}
		for mb := range M {
			stages[0][mb].StageForward(batches[mb][0], nil, nil, B, T)
			out := stages[0][mb].Output()
			if len(out) != B*T*cfg.Dim {
				t.Fatalf("stage 0 output of %d values", len(out))
			}
			if got := stages[1][mb].StageForward(nil, batches[mb][1], out, B, T); got != want[mb] {
				t.Errorf("recompute=%v micro-batch %d: loss %v, whole %v", recompute, mb, got, want[mb])
			}
		}
		for mb := range M {
			din := stages[1][mb].StageBackward(nil, 0.5)
			if len(din) != B*T*cfg.Dim {
				t.Fatalf("input gradient of %d values", len(din))
			}
			if stages[0][mb].StageBackward(din, 1) != nil {
				t.Error("the first stage returned an input gradient")
			}
		}
		for _, p := range params {
			g0, g1 := grads[0][p.Name], grads[1][p.Name]
			for j := range p.G {
				if g := g0[j] + g1[j]; g != 0.5*p.G[j] { // each weight is on one stage: the other adds 0
					t.Errorf("recompute=%v: %s[%d] gradient %v, whole %v", recompute, p.Name, j, g, 0.5*p.G[j])
					break
				}
			}
		}
	}
	if bytes[1] >= bytes[0] {
		t.Errorf("activations %d bytes with recompute, %d without", bytes[1], bytes[0])
	}
}
