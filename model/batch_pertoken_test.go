package model

import (
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

// TestDecodePairPerToken runs two to eight sequences' decodes side by side (batches of two to
// eight decode rows, in Invariant mode and outside it) on a Q8_0 model: where the kernels run
// such tokens as one-token decodes (kernels.PerTokenFaster, graph/exec's matmul ops), each
// sequence's logits must be bit for bit those of the sequence decoded alone.
func TestDecodePairPerToken(t *testing.T) {
	if testing.Short() {
		t.Skip("opens rand3M")
	}
	m := openRef(t, []string{"models", "rand3M", "rand3M-q8_0.gguf"})
	for name, w := range m.Weights {
		if len(w.Shape) == 2 && name != "token_embd.weight" && !(kernels.PerTokenFaster(w, 2) && kernels.PerTokenFaster(w, 8)) {
			t.Skipf("%s (%v %v) runs two tokens on the GEMM kernels here", name, w.Type, w.Shape)
		}
	}
	for _, lens := range [][]int{{5, 9}, {17, 2}, {5, 9, 3}, {4, 1, 7, 12}, {3, 8, 1, 5, 2}, {6, 2, 9, 1, 4, 7, 3, 5}} {
		for _, invariant := range []bool{false, true} {
			checkDecodesPerToken(t, m, lens, invariant)
		}
	}
}

// checkDecodesPerToken decodes sequences of the given prompt lengths alone and side by side
// (in Invariant mode or not) and compares their logits bit for bit.
func checkDecodesPerToken(t *testing.T, m *Model, lens []int, invariant bool) {
	prompts := randPrompts(m, lens, 7)
	const decodes = 6
	alone := make([][][]float32, len(prompts))
	for i, p := range prompts {
		s := newPagedSim(t, m, 1, 20, 4, uint64(i), invariant)
		s.toks[0] = append([]int(nil), p...)
		s.step(t, []int{len(p)})
		for range decodes {
			s.step(t, []int{1})
		}
		alone[i] = s.logits[0]
	}
	s := newPagedSim(t, m, len(prompts), 40, 4, 11, invariant)
	for i, p := range prompts {
		s.toks[i] = append([]int(nil), p...)
		n := make([]int, len(prompts))
		n[i] = len(p)
		s.step(t, n) // each prompt alone, so that only the decodes are batched
	}
	ones := make([]int, len(prompts))
	for i := range ones {
		ones[i] = 1
	}
	for range decodes {
		s.step(t, ones)
	}
	for i := range prompts {
		for k := range alone[i] {
			for v := range alone[i][k] {
				if alone[i][k][v] != s.logits[i][k][v] {
					t.Fatalf("%d sequences (invariant %v): seq %d logits %d token %d: alone %v, beside the others %v", len(lens), invariant, i, k, v, alone[i][k][v], s.logits[i][k][v])
				}
			}
		}
	}
}
