// Tests of Grad's structure (its numbers are checked through graph/ref): the backward graph of
// a quantized Llama verifies, round-trips through its text, has one backward node per forward
// node that needs it and F32 gradients of the weights' shapes; bad requests are errors.
package graph_test

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestGradLlamaGraph(t *testing.T) {
	cfg := model.Config{Arch: "qwen3", Dim: 64, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128,
		Vocab: 100, CtxLen: 64, RopeTheta: 1e6, RopeNeoX: true, QKNorm: true, NormEps: 1e-6, Tied: true}
	g, err := model.BuildGraph(&cfg, func(name string) tensor.DType { return tensor.Q8_0 }, false)
	if err != nil {
		t.Fatal(err)
	}
	lg, loss, err := graph.WithLoss(g, model.OutputLogits, "targets")
	if err != nil {
		t.Fatal(err)
	}
	gg, err := graph.Grad(lg, loss, lg.Weights)
	if err != nil {
		t.Fatal(err)
	}
	text := graph.String(gg)
	back, err := graph.Parse(text)
	if err != nil || graph.String(back) != text {
		t.Fatalf("the backward graph does not round-trip: %v", err)
	}
	if len(gg.Outputs) != 1+len(lg.Weights) || gg.Outputs[0].Name != "loss" {
		t.Fatalf("outputs %v", gg.Outputs)
	}
	for i, w := range lg.Weights {
		d := gg.Outputs[i+1]
		if d.Name != "d."+w.Name || d.Type.DType != tensor.F32 || !d.Type.Shape.Equal(w.Type.Shape) {
			t.Errorf("gradient of %s (%v): %s %v, want d.%s f32%v", w.Name, w.Type, d.Name, d.Type, w.Name, w.Type.Shape)
		}
	}
	c := gg.OpCounts()
	matmuls := 7*cfg.Layers + 1
	want := map[string]int{
		"matmul_dw": matmuls, "matmul_dx": matmuls, "attention_grad": cfg.Layers, "rope_grad": 2 * cfg.Layers,
		"rms_norm_grad": 4*cfg.Layers + 1, "embedding_grad": 1, "gather_rows_grad": 1, "cross_entropy_grad": 1,
		"silu_grad": cfg.Layers, "constant": 1,
	}
	for op, n := range want {
		if c[op] != n {
			t.Errorf("%d %s nodes, want %d", c[op], op, n)
		}
	}
	t.Logf("forward %d nodes, with backward %d: %v", len(lg.Nodes), len(gg.Nodes), c)
	// The compiler's passes apply to it: DCE finds nothing dead, the fusion still fuses.
	out, stages, err := graph.RunPasses(gg, graph.CompilerPasses...)
	if err != nil {
		t.Fatal(err)
	}
	if stages[0].NodesAfter != len(gg.Nodes) || len(out.Nodes) >= len(gg.Nodes) {
		t.Errorf("passes on the backward graph: %+v", stages)
	}
}

func TestGradErrors(t *testing.T) {
	b := graph.NewBuilder("e")
	x := b.Weight("x", graph.T(tensor.F32, graph.D(2), graph.D(3)))
	ids := b.Input("ids", graph.T(tensor.I32, graph.D(2)))
	y := b.Op("silu", nil, x)
	z := b.Op("silu_grad", nil, y, x) // a backward op: no rule of its own (no second order)
	l := b.Op("sum_rows", graph.Attrs{"keep": graph.Int(0)}, z)
	b.Output(l, y)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		loss *graph.Value
		wrt  []*graph.Value
		want string
	}{
		{y, []*graph.Value{x}, "scalar"},
		{l, []*graph.Value{ids}, "not a float input or weight"},
		{l, []*graph.Value{y}, "not a float input or weight"},
		{l, []*graph.Value{x}, "silu_grad): no backward rule"},
	}
	for _, c := range cases {
		_, err := graph.Grad(g, c.loss, c.wrt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Grad(%v, %v): %v, want an error with %q", c.loss, c.wrt, err, c.want)
		}
	}
}

// Memory planning works on the backward graph: at the stories110M shape and a batch of 512
// rows, the plan checks out and is far below every result in its own buffer (the numbers
// docs/compiler.md reports; weight gradients are results, so they are in the arena).
func TestGradMemoryPlanStories110M(t *testing.T) {
	lg, loss, err := graph.WithLoss(stories110M(t), model.OutputLogits, "targets")
	if err != nil {
		t.Fatal(err)
	}
	gg, err := graph.Grad(lg, loss, lg.Weights)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]int{"n": 512, "s": 512}
	var grads int64
	for _, d := range gg.Outputs[1:] {
		b, _ := d.Type.Bytes(env)
		grads += b
	}
	for _, g := range []*graph.Graph{lg, gg} {
		p, err := graph.PlanMemory(g, env)
		if err != nil {
			t.Fatal(err)
		}
		if err := graph.CheckPlan(g, p); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d nodes: unplanned %.1f MiB, planned %.1f MiB (lower bound %.1f MiB); weight gradients %.1f MiB",
			len(g.Nodes), float64(p.Unplanned)/(1<<20), float64(p.Peak)/(1<<20), float64(p.LowerBound)/(1<<20), float64(grads)/(1<<20))
		if p.Peak >= p.Unplanned/2 {
			t.Errorf("planned %d bytes of %d unplanned", p.Peak, p.Unplanned)
		}
	}
}
