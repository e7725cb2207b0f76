// Bad input gives errors naming the node or weight at fault, never a panic; and a decode step
// after warm-up allocates nothing in the executor.
package exec_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestCompileErrors(t *testing.T) {
	m := randModel(t, archConfigs()["qwen2"], tensor.Q8_0, 1)
	g0, err := m.Graph()
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := graph.RunPasses(g0, graph.ServingPipeline()...)
	if err != nil {
		t.Fatal(err)
	}
	f16, err := tensor.Convert(m.Weights["blk.1.attn_k.weight"], tensor.F16)
	if err != nil {
		t.Fatal(err)
	}
	short := *m.Weights["blk.0.ffn_norm.weight"]
	short.Shape, short.Data = []int{8}, short.Data[:32]
	for _, tc := range []struct {
		name string
		edit func(ws map[string]*tensor.Tensor) *graph.Graph
		want []string
	}{
		{"missing weight", func(ws map[string]*tensor.Tensor) *graph.Graph {
			delete(ws, "blk.1.ffn_up.weight")
			return g
		}, []string{"blk.1.ffn_up.weight", "missing"}},
		{"wrong dtype", func(ws map[string]*tensor.Tensor) *graph.Graph {
			ws["blk.1.attn_k.weight"] = f16
			return g
		}, []string{"blk.1.attn_k.weight", "F16", "q8_0"}},
		{"wrong shape", func(ws map[string]*tensor.Tensor) *graph.Graph {
			ws["blk.0.ffn_norm.weight"] = &short
			return g
		}, []string{"blk.0.ffn_norm.weight", "[8]"}},
		{"unknown op", func(map[string]*tensor.Tensor) *graph.Graph {
			c := g.Clone()
			c.Nodes[3].Op = "frobnicate"
			return c
		}, []string{c3(g), "frobnicate", "unknown op"}},
		{"training op", func(ws map[string]*tensor.Tensor) *graph.Graph {
			ws["e"] = &tensor.Tensor{Name: "e", Type: tensor.F32, Shape: []int{4, 4}, Data: make([]byte, 64)}
			b := graph.NewBuilder("ce")
			x := b.Input("tokens", graph.T(tensor.I32, graph.Sym("n")))
			e := b.Weight("e", graph.T(tensor.F32, graph.D(4), graph.D(4)))
			y := b.NamedOp("emb", "embedding", nil, e, x)
			b.Output(b.NamedOp("loss", "cross_entropy", nil, y, x))
			c, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, []string{"%loss", "cross_entropy", "not supported by the serving executor"}},
		{"training op", func(map[string]*tensor.Tensor) *graph.Graph {
			c := g.Clone()
			for _, n := range c.Nodes {
				if n.Op == "add" && n.Args[0].Type.Equal(n.Args[1].Type) {
					n.Op = "gelu_grad" // (dy, x): the residual add's types fit
					return c
				}
			}
			return c
		}, []string{"gelu_grad", "not supported by the serving executor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := maps.Clone(m.Weights)
			gg := tc.edit(ws)
			_, err := exec.Compile(gg, ws, exec.Options{})
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// c3 is the name of g's fourth node as errors print it.
func c3(g *graph.Graph) string { return g.Nodes[3].Name() }

func TestRunErrors(t *testing.T) {
	m := randModel(t, archConfigs()["llama"], tensor.Q8_0, 1)
	p := compile(t, m, false, graph.ServingPipeline())
	kv, err := m.NewPagedKV(4, 4)
	if err != nil {
		t.Fatal(err)
	}
	table := []int32{0, 1}
	for _, tc := range []struct {
		name string
		st   exec.Step
		want string
	}{
		{"token out of range", exec.Step{Tokens: []int{m.Config.Vocab}, Rows: []kernels.PagedRow{{Pos: 0, Table: table}}}, "%x.in (embedding): row 0: id 300"},
		{"rows and tokens", exec.Step{Tokens: []int{1, 2}, Rows: []kernels.PagedRow{{Pos: 0, Table: table}}}, "2 tokens but 1 rows"},
		{"logit row", exec.Step{Tokens: []int{1}, Rows: []kernels.PagedRow{{Pos: 0, Table: table}}, LogitRows: []int{1}}, "logit row 1"},
		{"short table", exec.Step{Tokens: []int{1}, Rows: []kernels.PagedRow{{Pos: 9, Table: table}}}, "row 0 at position 9: its table has 2 blocks"},
		{"block outside", exec.Step{Tokens: []int{1}, Rows: []kernels.PagedRow{{Pos: 1, Table: []int32{7}}}}, "block 7 outside the pool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			st.KV = exec.KV{K: kv.K, V: kv.V, BlockSize: kv.BlockSize}
			_, err := p.Run(&st)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestDecodeAllocs: after warm-up a decode step allocates nothing in the executor (on the
// serial pool with F32 weights, where the kernels allocate nothing either), and never more
// than ForwardBatch with quantized weights.
func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector")
	}
	for _, dt := range []tensor.DType{tensor.F32, tensor.Q8_0} {
		m := randModel(t, archConfigs()["qwen3"], dt, 2)
		m.Pool = kernels.Serial
		p := compile(t, m, false, graph.ServingPipeline())
		s := newPair(t, m, p, randPrompts(m.Config.Vocab, []int{20}, 1), false, 1)
		s.step(t, []int{20})
		tok := []int{5}
		table := s.tables[0]
		st := &exec.Step{Tokens: tok, Rows: []kernels.PagedRow{{Pos: 19, Table: table}}, LogitRows: []int{0},
			KV: exec.KV{K: s.kvP.K, V: s.kvP.V, BlockSize: s.kvP.BlockSize}}
		out := make([]float32, m.Config.Vocab)
		st.Out = out
		run := func() {
			if _, err := p.Run(st); err != nil {
				t.Fatal(err)
			}
		}
		run()
		got := testing.AllocsPerRun(20, run)
		seqs := []model.BatchSeq{{Tokens: tok, StartPos: 19, BlockTable: table, NeedsLogits: true}}
		base := testing.AllocsPerRun(20, func() {
			if _, err := m.ForwardBatch(&s.b, s.kvM, seqs); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%s: %v allocations per decode step, ForwardBatch %v (the matmul kernels' own)", dt, got, base)
		if got > base || dt == tensor.F32 && got != 0 {
			t.Errorf("%s: a decode step allocates %v times, ForwardBatch %v", dt, got, base)
		}
	}
}
