// Tests that Program.Run gives ForwardBatch's logits bit for bit: every architecture, weight
// type, batch invariance on and off, ragged batches of prefill chunks and decodes mixed.
// These compared the executor with the hand-written forward until model.ForwardBatch itself
// became the compiled graph (the last commit where they do: e599fcf); now they check the Step the model builds from its BatchSeqs, and the
// unfused graph against the fused one.
package exec_test

import (
	"fmt"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

var dtypes = []tensor.DType{tensor.F32, tensor.F16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K}

// raggedRun runs the schedule of model's batch tests through both paths, comparing each step.
func raggedRun(t *testing.T, s *pair) {
	sched := [][]int{{1, 5, 10, 16}, {1, 1, 13, 24}}
	for range 5 {
		sched = append(sched, []int{1, 1, 1, 1})
	}
	sched = append(sched, []int{0, 1, 0, 1}, []int{1, 0, 0, 0})
	for i, n := range sched {
		want, got := s.step(t, n)
		sameBits(t, fmt.Sprintf("step %d", i), want, got)
	}
	for l := range s.kvM.K {
		sameBits(t, fmt.Sprintf("layer %d K cache", l), s.kvM.K[l], s.kvP.K[l])
		sameBits(t, fmt.Sprintf("layer %d V cache", l), s.kvM.V[l], s.kvP.V[l])
	}
}

func TestMatchesForwardBatch(t *testing.T) {
	for name, cfg := range archConfigs() {
		for _, dt := range dtypes {
			m := randModel(t, cfg, dt, 11)
			for _, inv := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/invariant=%v", name, dt, inv), func(t *testing.T) {
					p := compile(t, m, inv, graph.ServingPipeline())
					raggedRun(t, newPair(t, m, p, randPrompts(cfg.Vocab, []int{2, 5, 23, 40}, 3), inv, 5))
				})
			}
		}
	}
}

// TestUnfusedMatchesForwardBatch runs the graph as built (no passes): the unfused ops compute
// the same floats.
func TestUnfusedMatchesForwardBatch(t *testing.T) {
	for _, name := range []string{"qwen2", "qwen3", "llama3"} {
		cfg := archConfigs()[name]
		m := randModel(t, cfg, tensor.Q8_0, 12)
		t.Run(name, func(t *testing.T) {
			p := compile(t, m, false, nil)
			raggedRun(t, newPair(t, m, p, randPrompts(cfg.Vocab, []int{2, 5, 23, 40}, 4), false, 6))
		})
	}
}
