// Tests of the serving fusion passes on the Llama family's real graphs (model.BuildGraph):
// each pass's op counts before and after, the input graph left as it was, the result
// printable and parsable, and the cases a pass must leave alone.
package graph_test

import (
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

func cfgOf(arch string, layers int) model.Config {
	c := model.Config{Arch: arch, Dim: 64, Layers: layers, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 50,
		RopeTheta: 10000, NormEps: 1e-5}
	switch arch {
	case "qwen2":
		c.QKVBias, c.RopeNeoX = true, true
	case "qwen3":
		c.QKNorm, c.RopeNeoX, c.HeadDim = true, true, 32
	}
	return c
}

func build(t *testing.T, c model.Config, freqs bool) *graph.Graph {
	t.Helper()
	g, err := model.BuildGraph(&c, func(string) tensor.DType { return tensor.Q8_0 }, freqs)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// apply runs one pass, checks the input is unchanged and the output round-trips as text.
func apply(t *testing.T, g *graph.Graph, p graph.Pass) (*graph.Graph, graph.Stats) {
	t.Helper()
	before := graph.String(g)
	out, stages, err := graph.RunPasses(g, p)
	if err != nil {
		t.Fatal(err)
	}
	if graph.String(g) != before {
		t.Fatalf("%s changed its input graph", p.Name)
	}
	text := graph.String(out)
	back, err := graph.Parse(text)
	if err != nil {
		t.Fatalf("%s: result does not parse: %v", p.Name, err)
	}
	if graph.String(back) != text {
		t.Fatalf("%s: result does not round-trip", p.Name)
	}
	return out, stages[0].Stats
}

func wantOps(t *testing.T, g *graph.Graph, want map[string]int) {
	t.Helper()
	got := g.OpCounts()
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%d %s nodes, want %d (all: %v)", got[op], op, n, got)
		}
	}
}

func TestFuseMatMulMulti(t *testing.T) {
	const L = 3
	g := build(t, cfgOf("llama", L), false)
	wantOps(t, g, map[string]int{"matmul": 7*L + 1, "matmul_multi": 0})
	out, st := apply(t, g, graph.FuseMatMulMulti)
	wantOps(t, out, map[string]int{"matmul": 2*L + 1, "matmul_multi": 2 * L})
	if st["matmuls merged"] != 5*L {
		t.Errorf("stats %v", st)
	}
	for _, n := range out.Nodes {
		if n.Op == "matmul_multi" && len(n.Args) != 4 && len(n.Args) != 3 {
			t.Errorf("%s has %d arguments", n.Name(), len(n.Args))
		}
	}
}

func TestFuseSwiGLU(t *testing.T) {
	const L = 2
	out, st := apply(t, build(t, cfgOf("llama", L), false), graph.FuseSwiGLU)
	wantOps(t, out, map[string]int{"silu": 0, "mul": 0, "swiglu": L})
	if st["fused swiglu"] != L {
		t.Errorf("stats %v", st)
	}
	// u * silu(g) fuses too; a silu with a second use does not.
	n := graph.Sym("n")
	for _, tc := range []struct {
		name   string
		shared bool
		want   int
	}{{"commuted", false, 1}, {"silu used twice", true, 0}} {
		b := graph.NewBuilder("t")
		g0 := b.Input("g", graph.T(tensor.F32, n, graph.D(8)))
		u := b.Input("u", graph.T(tensor.F32, n, graph.D(8)))
		s := b.Op("silu", nil, g0)
		y := b.Op("mul", nil, u, s)
		if tc.shared {
			y = b.Op("add", nil, y, s)
		}
		b.Output(y)
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		out, _ := apply(t, g, graph.FuseSwiGLU)
		if c := out.OpCounts()["swiglu"]; c != tc.want {
			t.Errorf("%s: %d swiglu, want %d", tc.name, c, tc.want)
		}
	}
}

func TestFuseQKVRope(t *testing.T) {
	const L = 2
	for _, tc := range []struct {
		arch  string
		freqs bool
		after map[string]int
	}{
		{"llama", true, map[string]int{"rope": 0, "qkv_rope": L, "add": 2 * L, "rms_norm": 2*L + 1}},
		{"qwen2", false, map[string]int{"rope": 0, "qkv_rope": L, "add": 2 * L, "rms_norm": 2*L + 1}},
		{"qwen3", false, map[string]int{"rope": 0, "qkv_rope": L, "add": 2 * L, "rms_norm": 2*L + 1}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			g, _ := apply(t, build(t, cfgOf(tc.arch, L), tc.freqs), graph.FuseMatMulMulti)
			out, st := apply(t, g, graph.FuseQKVRope)
			wantOps(t, out, tc.after)
			if st["fused qkv_rope"] != L {
				t.Errorf("stats %v", st)
			}
			for _, n := range out.Nodes {
				if n.Op != "attention" {
					continue
				}
				for _, a := range n.Args {
					if a.Def.Op != "qkv_rope" {
						t.Errorf("%s reads %s from %s", n.Name(), a, a.Def.Op)
					}
				}
			}
		})
	}
}

// TestServingPassesStories110M shows what the serving pipeline does at the stories110M shape.
func TestServingPassesStories110M(t *testing.T) {
	c := model.Config{Arch: "llama", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, HeadDim: 64, FFN: 2048,
		Vocab: 32000, RopeTheta: 10000, NormEps: 1e-5, Tied: true}
	g := build(t, c, false)
	out, stages, err := graph.RunPasses(g, graph.ServingPipeline()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		t.Logf("%-18s nodes %4d -> %4d  %v", s.Pass, s.NodesBefore, s.NodesAfter, s.Stats)
	}
	if len(out.Nodes) >= len(g.Nodes) {
		t.Errorf("nodes %d -> %d", len(g.Nodes), len(out.Nodes))
	}
}
