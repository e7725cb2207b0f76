package exec_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/tensor"
)

// TestRopeYarnAttentionMatchesReference: rope with YaRN attributes (rotate-half, as gpt-oss)
// on q and k feeding attention with sinks, run by the executor after the serving passes (the
// ropes fused into qkv_rope, keeping YaRN) against graph/ref on the unfused graph, over ragged
// steps.
func TestRopeYarnAttentionMatchesReference(t *testing.T) {
	const V, H, KVH, hd = 32, 4, 2, 16
	n := graph.Sym("n")
	b := graph.NewBuilder("yarn")
	tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
	pos := b.Input(exec.InputPositions, graph.T(tensor.I32, n))
	rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
	emb := func(name string, w int) *graph.Value {
		return b.Op("embedding", nil, b.Weight(name, graph.T(tensor.F32, graph.D(V), graph.D(w))), tok)
	}
	ra := func(heads int64) graph.Attrs {
		return graph.Attrs{"heads": graph.Int(heads), "head_dim": graph.Int(hd), "theta": graph.Float(150000), "neox": graph.Int(1),
			"mscale": graph.Float(1.2), "yarn_factor": graph.Float(8), "yarn_orig_ctx": graph.Int(6)}
	}
	q := b.Op("rope", ra(H), emb("q", H*hd), pos)
	k := b.Op("rope", ra(KVH), emb("k", KVH*hd), pos)
	a := graph.Attrs{"layer": graph.Int(0), "heads": graph.Int(H), "kv_heads": graph.Int(KVH), "head_dim": graph.Int(hd), "window": graph.Int(4)}
	att := b.Op("attention", a, q, k, emb("v", KVH*hd), b.Weight("sinks", graph.T(tensor.F32, graph.D(H))))
	b.Output(b.Op("gather_rows", nil, att, rows))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	fused, _, err := graph.RunPasses(g, graph.ServingPipeline()...)
	if err != nil {
		t.Fatal(err)
	}
	if c := fused.OpCounts(); c["qkv_rope"] != 1 || c["rope"] != 0 {
		t.Fatalf("serving passes: ops %v, want the ropes fused into one qkv_rope", c)
	}
	rng := rand.New(rand.NewPCG(8, 8))
	rnd := func(name string, shape ...int) *tensor.Tensor {
		return f32T(name, shape, func(int) float32 { return float32(rng.NormFloat64()) })
	}
	ws := map[string]*tensor.Tensor{"q": rnd("q", V, H*hd), "k": rnd("k", V, KVH*hd), "v": rnd("v", V, KVH*hd), "sinks": rnd("sinks", H)}
	p, err := exec.Compile(fused, ws, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, seqs := runRagged(t, p, [][]int{{7, 3}, {1, 6}, {5, 1}, {1, 1}}, 4, KVH*hd, KVH*hd, H*hd, V, rng)
	want := refRun(t, g, ws, seqs)
	var big, diff float64
	for i, w := range want {
		big = math.Max(big, math.Abs(w))
		diff = math.Max(diff, math.Abs(float64(got[i])-w))
	}
	t.Logf("max |kernel - ref| %.3g (largest |output| %.3g)", diff, big)
	if big < 0.1 || diff > 1e-5*big {
		t.Fatalf("max |kernel - ref| %.3g, largest |output| %.3g", diff, big)
	}
}
