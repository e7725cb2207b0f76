// The attention kernel with sinks (gpt-oss: a learned logit per head in each softmax's
// denominator) against graph/ref, op by op: q, k, v from embedding tables by token, ragged
// steps of several sequences over scattered blocks, with and without a sliding window (gpt-oss
// alternates windowed and full layers) and GQA; plus the reference against the formula.
package exec_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestAttentionSinksMatchesReference(t *testing.T) {
	for _, c := range []struct {
		name           string
		H, KVH, hd, bs int
		window         int
		sinkScale      float64
		chunks         [][]int
	}{
		{"4 heads over 2, full", 4, 2, 8, 4, 0, 1, [][]int{{5, 3}, {1, 4}, {2, 1}, {1, 1}}},
		{"4 heads over 1, window 3", 4, 1, 8, 2, 3, 1, [][]int{{6, 2, 1}, {1, 1, 5}, {3, 1, 1}}},
		{"2 heads, large sinks, window 5", 2, 2, 16, 4, 5, 4, [][]int{{9}, {1}, {4}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const V = 32
			n := graph.Sym("n")
			b := graph.NewBuilder("sinks")
			tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
			b.Input(exec.InputPositions, graph.T(tensor.I32, n))
			rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
			emb := func(name string, w int) *graph.Value {
				return b.Op("embedding", nil, b.Weight(name, graph.T(tensor.F32, graph.D(V), graph.D(w))), tok)
			}
			a := graph.Attrs{"layer": graph.Int(0), "heads": graph.Int(int64(c.H)), "kv_heads": graph.Int(int64(c.KVH)),
				"head_dim": graph.Int(int64(c.hd))}
			if c.window > 0 {
				a["window"] = graph.Int(int64(c.window))
			}
			att := b.Op("attention", a, emb("q", c.H*c.hd), emb("k", c.KVH*c.hd), emb("v", c.KVH*c.hd),
				b.Weight("sinks", graph.T(tensor.F32, graph.D(c.H))))
			b.Output(b.Op("gather_rows", nil, att, rows))
			g, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(c.H), 11))
			rnd := func(name string, sd float64, shape ...int) *tensor.Tensor {
				return f32T(name, shape, func(int) float32 { return float32(rng.NormFloat64() * sd) })
			}
			ws := map[string]*tensor.Tensor{"q": rnd("q", 1, V, c.H*c.hd), "k": rnd("k", 1, V, c.KVH*c.hd),
				"v": rnd("v", 1, V, c.KVH*c.hd), "sinks": rnd("sinks", c.sinkScale, c.H)}
			p, err := exec.Compile(g, ws, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, seqs := runRagged(t, p, c.chunks, c.bs, c.KVH*c.hd, c.KVH*c.hd, c.H*c.hd, V, rng)
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
			// Without the sinks the outputs differ: the sinks matter in this test.
			a2 := graph.Attrs{}
			for k, v := range a {
				a2[k] = v
			}
			b2 := graph.NewBuilder("nosinks")
			tok2 := b2.Input(exec.InputTokens, graph.T(tensor.I32, n))
			b2.Input(exec.InputPositions, graph.T(tensor.I32, n))
			rows2 := b2.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
			emb2 := func(name string, w int) *graph.Value {
				return b2.Op("embedding", nil, b2.Weight(name, graph.T(tensor.F32, graph.D(V), graph.D(w))), tok2)
			}
			b2.Output(b2.Op("gather_rows", nil, b2.Op("attention", a2, emb2("q", c.H*c.hd), emb2("k", c.KVH*c.hd), emb2("v", c.KVH*c.hd)), rows2))
			g2, err := b2.Finish()
			if err != nil {
				t.Fatal(err)
			}
			plain := refRun(t, g2, ws, seqs)
			var moved float64
			for i := range plain {
				moved = math.Max(moved, math.Abs(plain[i]-want[i]))
			}
			if moved < 1e-2*big {
				t.Fatalf("the sinks moved the output by %.3g only", moved)
			}
		})
	}
}

// runRagged runs p over sequences of random tokens added per step as chunks says (chunks[s][i]:
// sequence i's new tokens at step s), each over scattered blocks of bs slots of a one-layer KV
// pool of kd/vd wide rows, and returns every row's output (outW wide) in sequence order and
// the sequences.
func runRagged(t *testing.T, p *exec.Program, chunks [][]int, bs, kd, vd, outW, vocab int, rng *rand.Rand) ([]float32, [][]int) {
	nseq := len(chunks[0])
	lens := make([]int, nseq)
	for _, step := range chunks {
		for i, k := range step {
			lens[i] += k
		}
	}
	seqs, tables := make([][]int, nseq), make([][]int32, nseq)
	perm := rng.Perm(64)
	next := 0
	for i := range seqs {
		for j := 0; j < lens[i]; j++ {
			seqs[i] = append(seqs[i], rng.IntN(vocab))
		}
		for b := 0; b*bs < lens[i]; b++ {
			tables[i] = append(tables[i], int32(perm[next]))
			next++
		}
	}
	kv := exec.KV{K: [][]float32{make([]float32, 64*bs*kd)}, V: [][]float32{make([]float32, 64*bs*vd)}, BlockSize: bs}
	got := make([][]float32, nseq)
	done := make([]int, nseq)
	for _, step := range chunks {
		st := &exec.Step{KV: kv}
		var owner []int
		for i, k := range step {
			for j := done[i]; j < done[i]+k; j++ {
				st.Tokens = append(st.Tokens, seqs[i][j])
				st.Rows = append(st.Rows, kernels.PagedRow{Pos: j, Table: tables[i]})
				st.LogitRows = append(st.LogitRows, len(st.LogitRows))
				owner = append(owner, i)
			}
			done[i] += k
		}
		out, err := p.Run(st)
		if err != nil {
			t.Fatal(err)
		}
		for r, i := range owner {
			got[i] = append(got[i], out[r*outW:(r+1)*outW]...)
		}
	}
	var flat []float32
	for _, o := range got {
		flat = append(flat, o...)
	}
	return flat, seqs
}

// refRun runs g in graph/ref over the whole sequences, one after another.
func refRun(t *testing.T, g *graph.Graph, ws map[string]*tensor.Tensor, seqs [][]int) []float64 {
	vals := map[string]*ref.Tensor{}
	for name, w := range ws {
		if g.Value(name) == nil {
			continue
		}
		v, err := ref.FromTensor(w)
		if err != nil {
			t.Fatal(err)
		}
		vals[name] = v
	}
	var toks, pos, rows []int32
	for _, s := range seqs {
		for j, tk := range s {
			rows = append(rows, int32(len(toks)))
			toks, pos = append(toks, int32(tk)), append(pos, int32(j))
		}
	}
	vals[exec.InputTokens] = ref.Ints([]int{len(toks)}, toks)
	vals[exec.InputPositions] = ref.Ints([]int{len(toks)}, pos)
	vals[exec.InputLogitRows] = ref.Ints([]int{len(rows)}, rows)
	out, err := ref.Run(g, vals)
	if err != nil {
		t.Fatal(err)
	}
	return out[0].F
}
