// Tests of the dead-code elimination and add + rms_norm fusion passes on graphs written in the
// text form: each checks what the pass must change, so an identity pass fails them.
package graph

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) *Graph {
	t.Helper()
	g, err := Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return g
}

func TestDCERemovesDeadBranches(t *testing.T) {
	g := mustParse(t, `graph dead {
  input %x: f32[n,8]
  input %unused: i32[n]
  input %pos: i32[n]
  weight %w: f32[8,8]
  weight %w2: f32[8,8]
  weight %norm: f32[8]
  weight %wk: f32[4,8]
  %a: f32[n,8] = matmul(%x, %w)
  %dead1: f32[n,8] = matmul(%a, %w2)
  %dead2: f32[n,8] = silu(%dead1)
  %dead3: f32[n,8] = rms_norm(%dead2, %norm) {eps=1e-05}
  %k: f32[n,4] = matmul(%x, %wk)
  %q: f32[n,8] = scale(%a) {by=2.0}
  %att: f32[n,8] = attention(%q, %k, %k) {head_dim=4, heads=2, kv_heads=1, layer=0}
  %b: f32[n,8] = silu(%a)
  output %b
}
`)
	out, stages, err := RunPasses(g, DCE)
	if err != nil {
		t.Fatal(err)
	}
	text := String(out)
	for _, gone := range []string{"%dead1", "%dead2", "%dead3", "weight %w2", "weight %norm"} {
		if strings.Contains(text, gone) {
			t.Errorf("%s survived DCE:\n%s", gone, text)
		}
	}
	// attention writes the KV cache: it stays, with what it reads; inputs are the calling
	// convention and stay too.
	for _, kept := range []string{"= attention(", "%q: f32[n,8] = scale", "weight %wk", "input %unused", "%b: f32[n,8] = silu(%a)"} {
		if !strings.Contains(text, kept) {
			t.Errorf("%s was removed:\n%s", kept, text)
		}
	}
	st := stages[0].Stats
	if st["removed nodes"] != 3 || st["removed weights"] != 2 || stages[0].NodesBefore != 8 || stages[0].NodesAfter != 5 {
		t.Errorf("stats %v, nodes %d -> %d", st, stages[0].NodesBefore, stages[0].NodesAfter)
	}
	// The input graph is untouched, and a second run finds nothing.
	if len(g.Nodes) != 8 || len(g.Weights) != 4 {
		t.Errorf("DCE changed its input: %d nodes, %d weights", len(g.Nodes), len(g.Weights))
	}
	if _, st, _ := DCE.Run(out); st["removed nodes"] != 0 || st["removed weights"] != 0 {
		t.Errorf("second run: %v", st)
	}
}

const residualBlock = `graph res {
  input %x: f32[n,8]
  weight %w: f32[8,8]
  weight %n1: f32[8]
  weight %n2: f32[8]
  weight %bias: f32[8]
  %o: f32[n,8] = matmul(%x, %w)
  %r1: f32[n,8] = add(%x, %o)
  %h1: f32[n,8] = rms_norm(%r1, %n1) {eps=1e-05}
  %d: f32[n,8] = matmul(%h1, %w)
  %r2: f32[n,8] = add(%r1, %d)
  %h2: f32[n,8] = rms_norm(%r2, %n2) {eps=1e-06}
  %e: f32[n,8] = add(%h2, %bias)
  %f: f32[n,8] = add(%e, %h2)
  %g: f32[n,8] = rms_norm(%f, %n1) {eps=1e-05}
  output %r2, %e, %g
}
`

func TestFuseAddNorm(t *testing.T) {
	g := mustParse(t, residualBlock)
	out, stages, err := RunPasses(g, FuseAddNorm)
	if err != nil {
		t.Fatal(err)
	}
	text := String(out)
	// r1 feeds its norm and the next add; r2 its norm and the output: both fuse, keeping their
	// names and each norm's eps. f feeds only its norm (no residual use), and e is a bias add
	// (broadcast): neither fuses.
	for _, want := range []string{
		"%r1: f32[n,8], %h1: f32[n,8] = add_rms_norm(%x, %o, %n1) {eps=1e-05}",
		"%r2: f32[n,8], %h2: f32[n,8] = add_rms_norm(%r1, %d, %n2) {eps=1e-06}",
		"%e: f32[n,8] = add(%h2, %bias)",
		"%f: f32[n,8] = add(%e, %h2)",
		"%g: f32[n,8] = rms_norm(%f, %n1)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if c := out.OpCounts(); c["add_rms_norm"] != 2 || c["rms_norm"] != 1 || c["add"] != 2 {
		t.Errorf("counts %v", c)
	}
	if st := stages[0].Stats; st["fused add+rms_norm"] != 2 || stages[0].NodesAfter != stages[0].NodesBefore-2 {
		t.Errorf("stats %v, nodes %d -> %d", st, stages[0].NodesBefore, stages[0].NodesAfter)
	}
	if strings.Contains(String(g), "add_rms_norm") {
		t.Error("the pass changed its input graph")
	}
	// The text form round-trips, and the fused graph plans to no more memory.
	if _, err := Parse(text); err != nil {
		t.Fatal(err)
	}
	env := map[string]int{"n": 4}
	before, err1 := PlanMemory(g, env)
	after, err2 := PlanMemory(out, env)
	if err1 != nil || err2 != nil || after.Peak > before.Peak {
		t.Errorf("peak %v -> %v (%v %v)", before, after, err1, err2)
	}
}

// The norm's weight must be defined before the add for the fused node to stand there, and
// group norms (per head) do not fuse.
func TestFuseAddNormLeavesOthers(t *testing.T) {
	for name, text := range map[string]string{
		"group norm": `graph other {
  input %x: f32[n,8]
  weight %head: f32[4]
  %r: f32[n,8] = add(%x, %x)
  %h: f32[n,8] = rms_norm(%r, %head) {eps=1e-05}
  %s: f32[n,8] = silu(%r)
  output %h, %s
}
`,
		"weight defined later": `graph other {
  input %x: f32[n,8]
  input %v: f32[8]
  %r: f32[n,8] = add(%x, %x)
  %nw: f32[8] = scale(%v) {by=2.0}
  %h: f32[n,8] = rms_norm(%r, %nw) {eps=1e-05}
  %s: f32[n,8] = silu(%r)
  output %h, %s
}
`} {
		g := mustParse(t, text)
		out, st, err := FuseAddNorm.Run(g)
		if err != nil || st["fused add+rms_norm"] != 0 || String(out) != String(g) {
			t.Errorf("%s: %v %v:\n%s", name, st, err, String(out))
		}
	}
}

// On random graphs: DCE keeps exactly the nodes that reach an output and is idempotent; the
// fusion removes one add and one rms_norm per fusion and keeps every value's name.
func TestPassesRandomGraphs(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 2))
	total := int64(0)
	for i := range 300 {
		g := randomGraph(t, r, 5+r.IntN(40))
		d, st, err := DCE.Run(g)
		if err != nil || Verify(d) != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		reach := map[*Value]bool{}
		for _, o := range g.Outputs {
			reach[o] = true
		}
		kept := 0
		for j := len(g.Nodes) - 1; j >= 0; j-- {
			n := g.Nodes[j]
			live := false
			for _, o := range n.Outs {
				live = live || reach[o]
			}
			if live {
				kept++
				for _, a := range n.Args {
					reach[a] = true
				}
			}
		}
		if len(d.Nodes) != kept || st["removed nodes"] != int64(len(g.Nodes)-kept) {
			t.Fatalf("graph %d: DCE kept %d nodes, %d reach an output (%v)", i, len(d.Nodes), kept, st)
		}
		if again, _, _ := DCE.Run(d); String(again) != String(d) {
			t.Fatalf("graph %d: DCE is not idempotent", i)
		}
		f, st, err := FuseAddNorm.Run(d)
		if err != nil || Verify(f) != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		k := st["fused add+rms_norm"]
		total += k
		before, after := d.OpCounts(), f.OpCounts()
		if int64(before["add"]-after["add"]) != k || int64(before["rms_norm"]-after["rms_norm"]) != k ||
			int64(after["add_rms_norm"]-before["add_rms_norm"]) != k {
			t.Fatalf("graph %d: %d fused, counts %v -> %v", i, k, before, after)
		}
		names := func(h *Graph) map[string]bool {
			m := map[string]bool{}
			for _, n := range h.Nodes {
				for _, o := range n.Outs {
					m[o.Name] = true
				}
			}
			return m
		}
		if nb, na := names(d), names(f); len(nb) != len(na) {
			t.Fatalf("graph %d: %d values -> %d", i, len(nb), len(na))
		}
	}
	if total == 0 {
		t.Fatal("no random graph had an add + norm to fuse")
	}
}
