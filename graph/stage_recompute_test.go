// Tests of the training transformations on the Llama graph: the pipeline-stage cut with the
// backward from a seeded output gradient, and recomputation, whose planned activation memory
// at the stories110M shape is reported and must be well below the plan without it.
package graph_test

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/model"
)

func TestCutMiddleStage(t *testing.T) {
	g := stories110M(t)
	st, err := graph.Cut(g, model.BlockInput(3), model.BlockInput(5))
	if err != nil {
		t.Fatal(err)
	}
	c := st.OpCounts()
	if c["attention"] != 2 || c["embedding"] != 0 || c["gather_rows"] != 0 || c["matmul"] != 14 {
		t.Errorf("blocks 3, 4: ops %v", c)
	}
	if len(st.Inputs) != 2 || st.Inputs[0].Name != "x.2" || st.Inputs[1].Name != "pos" || st.Outputs[0].Name != "x.4" {
		t.Errorf("inputs %v, outputs %v", st.Inputs, st.Outputs)
	}
	for _, w := range st.Weights {
		if !strings.HasPrefix(w.Name, "blk.3.") && !strings.HasPrefix(w.Name, "blk.4.") {
			t.Errorf("weight %s kept", w.Name)
		}
	}
	if len(st.Weights) != 18 {
		t.Errorf("%d weights", len(st.Weights))
	}
	// The backward from the next stage's gradient, to the input's.
	in := st.Inputs[0]
	wrt := append([]*graph.Value{in}, st.Weights...)
	bg, err := graph.GradFrom(st, st.Outputs[0], "dout", wrt)
	if err != nil {
		t.Fatal(err)
	}
	if bg.Value("dout") == nil || bg.Value("dout").Kind != graph.KindInput || len(bg.Outputs) != 1+len(wrt) {
		t.Fatalf("seeded backward: inputs %v outputs %d", bg.Inputs, len(bg.Outputs))
	}
	if d := bg.Outputs[1]; d.Type.String() != "f32[n,768]" || d.Kind != graph.KindResult {
		t.Errorf("input gradient %v", d)
	}
	if c := bg.OpCounts(); c["attention_grad"] != 2 || c["constant"] != 0 {
		t.Errorf("seeded backward ops %v", c)
	}
	// Last stage: no cut at the end, the head and loss stay.
	last, err := graph.Cut(g, model.BlockInput(10), "")
	if err != nil {
		t.Fatal(err)
	}
	if c := last.OpCounts(); c["attention"] != 2 || c["gather_rows"] != 1 || last.Outputs[0].Name != model.OutputLogits || last.Value("output.weight") == nil {
		t.Errorf("last stage: ops %v outputs %v", c, last.Outputs)
	}
}

func TestRecomputeStories110M(t *testing.T) {
	g := stories110M(t)
	lg, loss, err := graph.WithLoss(g, model.OutputLogits, "targets")
	if err != nil {
		t.Fatal(err)
	}
	bg, err := graph.Grad(lg, loss, lg.Weights)
	if err != nil {
		t.Fatal(err)
	}
	rc, st, err := graph.Recompute(bg, len(lg.Nodes), model.Residuals(0, 12))
	if err != nil {
		t.Fatal(err)
	}
	if st["segments"] != 12 || st["recomputed nodes"] < 12*10 {
		t.Errorf("stats %v", st)
	}
	// The backward reads no block intermediate of the forward: only residuals, the head, inputs.
	fwd := map[*graph.Value]bool{}
	head := rc.Value(model.BlockInput(12)).Def
	for _, n := range rc.Nodes[:len(lg.Nodes)] {
		if n == head {
			break
		}
		for _, o := range n.Outs {
			fwd[o] = true
		}
	}
	keep := map[string]bool{}
	for _, name := range model.Residuals(0, 12) {
		keep[name] = true
	}
	for _, n := range rc.Nodes[len(lg.Nodes):] {
		for _, a := range n.Args {
			if fwd[a] && !keep[a.Name] {
				t.Errorf("backward node %s reads the forward's %s", n.Name(), a)
			}
		}
	}
	env := map[string]int{"n": 4 * 256, "s": 4 * 256}
	plain, err := graph.PlanMemory(bg, env)
	if err != nil {
		t.Fatal(err)
	}
	with, err := graph.PlanMemory(rc, env)
	if err != nil {
		t.Fatal(err)
	}
	if err := graph.CheckPlan(rc, with); err != nil {
		t.Fatal(err)
	}
	t.Logf("stories110M, 4x256 rows: planned activations %d MiB without recompute, %d MiB with (%d recomputed nodes)",
		plain.Peak>>20, with.Peak>>20, st["recomputed nodes"])
	if with.Peak*10 > plain.Peak*6 {
		t.Errorf("recompute plans %d bytes, without %d: want less than 60%%", with.Peak, plain.Peak)
	}
}
