// The passes and memory planning on the Llama graph at the stories110M shape (dim 768, 12
// layers, 12 heads, ffn 2048, vocab 32000): what each does, as docs/compiler.md reports it.
package graph_test

import (
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/model"
)

func stories110M(t *testing.T) *graph.Graph {
	t.Helper()
	cfg := model.Config{Arch: "llama", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, HeadDim: 64, FFN: 2048,
		Vocab: 32000, CtxLen: 1024, RopeTheta: 10000, NormEps: 1e-5}
	g, err := model.BuildGraph(&cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestPassesOnStories110M(t *testing.T) {
	g := stories110M(t)
	out, stages, err := graph.RunPasses(g, graph.CompilerPasses...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		t.Logf("%s: %d -> %d nodes (%v)", s.Pass, s.NodesBefore, s.NodesAfter, s.Stats)
	}
	// Every block has two residual adds; each but the last block's second feeds the next
	// block's attention norm: 2*12-1 fusions.
	if c := out.OpCounts(); c["add_rms_norm"] != 23 || c["rms_norm"] != 2 || c["add"] != 1 {
		t.Errorf("after passes: %v", c)
	}
	if len(out.Nodes) != len(g.Nodes)-23 {
		t.Errorf("%d -> %d nodes", len(g.Nodes), len(out.Nodes))
	}
	for _, n := range []int{1, 512} {
		env := map[string]int{"n": n, "s": 1}
		for _, h := range []struct {
			name string
			g    *graph.Graph
		}{{"built", g}, {"compiled", out}} {
			p, err := graph.PlanMemory(h.g, env)
			if err != nil {
				t.Fatal(err)
			}
			if err := graph.CheckPlan(h.g, p); err != nil {
				t.Fatal(err)
			}
			t.Logf("n=%d %s: planned %d bytes (lower bound %d), unplanned %d (%.1fx), %d values, %d in place",
				n, h.name, p.Peak, p.LowerBound, p.Unplanned, float64(p.Unplanned)/float64(p.Peak), p.Values, p.Aliased)
			// Without planning the arena is the unplanned sum; with it, the most bytes live at
			// one node: at n=1 the logits and the row before them dominate (7x less), at
			// n=512 the FFN's two [512,2048] matmul results (37x less).
			want := int64(4)
			if n == 512 {
				want = 20
			}
			if p.Peak*want > p.Unplanned || p.Peak < p.LowerBound || p.Peak > p.LowerBound*11/10 {
				t.Errorf("n=%d %s: planned %d, lower bound %d, unplanned %d: want planned below 1/%d of unplanned and within 10%% of the bound",
					n, h.name, p.Peak, p.LowerBound, p.Unplanned, want)
			}
		}
	}
}
