// The mla_attention kernel (absorbed form over the paged latent cache) against graph/ref's
// float64 expanded form, op by op: q, the latent and the RoPE key come from embedding tables
// by token, so a step's rows are arbitrary; several shapes (rotate-half and adjacent pairs, a
// scale, YaRN, an F16 kv_b), two or three sequences in ragged steps (prefill chunks and single
// tokens mixed) over scattered blocks, every row's output compared with the reference run on
// the whole sequences.
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

type mlaCase struct {
	name                 string
	H, nope, rope, vd, R int
	bs                   int // KV block size
	attrs                graph.Attrs
	kvb                  tensor.DType
	chunks               [][]int // per step, per sequence, the tokens it adds (0: none)
	tol                  float64
}

func mlaGraph(t *testing.T, c mlaCase) *graph.Graph {
	const V = 32
	n := graph.Sym("n")
	b := graph.NewBuilder("mla")
	tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
	pos := b.Input(exec.InputPositions, graph.T(tensor.I32, n))
	rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
	emb := func(name string, w int) *graph.Value {
		return b.Op("embedding", nil, b.Weight(name, graph.T(tensor.F32, graph.D(V), graph.D(w))), tok)
	}
	q, lat, kpe := emb("q", c.H*(c.nope+c.rope)), emb("c", c.R), emb("kpe", c.rope)
	kvb := b.Weight("kvb", graph.T(c.kvb, graph.D(c.H*(c.nope+c.vd)), graph.D(c.R)))
	a := graph.Attrs{"layer": graph.Int(0), "heads": graph.Int(int64(c.H)), "nope": graph.Int(int64(c.nope)),
		"rope": graph.Int(int64(c.rope)), "v_dim": graph.Int(int64(c.vd)), "theta": graph.Float(10000)}
	for k, v := range c.attrs {
		a[k] = v
	}
	b.Output(b.Op("gather_rows", nil, b.Op("mla_attention", a, q, lat, kpe, pos, kvb), rows))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestMLAKernelMatchesReference(t *testing.T) {
	yarn := graph.Attrs{"yarn_factor": graph.Float(4), "yarn_orig_ctx": graph.Int(8), "mscale": graph.Float(1 / (1 + 0.1*math.Log(4))),
		"scale": graph.Float(0.3)}
	for _, c := range []mlaCase{
		{name: "2 heads, pairs", H: 2, nope: 8, rope: 4, vd: 6, R: 16, bs: 4, kvb: tensor.F32,
			chunks: [][]int{{5, 3}, {1, 4}, {2, 1}, {1, 0}, {0, 1}}, tol: 1e-5},
		{name: "4 heads, halves, scale", H: 4, nope: 16, rope: 8, vd: 16, R: 32, bs: 2, kvb: tensor.F32,
			attrs: graph.Attrs{"neox": graph.Int(1), "scale": graph.Float(0.2)}, chunks: [][]int{{3, 1, 6}, {1, 1, 1}, {4, 2, 0}, {1, 1, 1}}, tol: 1e-5},
		{name: "1 head, odd widths, block 3", H: 1, nope: 4, rope: 2, vd: 3, R: 5, bs: 3, kvb: tensor.F32,
			chunks: [][]int{{7}, {1}, {1}, {3}}, tol: 1e-5},
		{name: "yarn", H: 2, nope: 8, rope: 8, vd: 8, R: 16, bs: 4, kvb: tensor.F32, attrs: yarn,
			chunks: [][]int{{9, 2}, {1, 7}, {6, 1}}, tol: 1e-5},
		{name: "f16 kv_b", H: 3, nope: 8, rope: 4, vd: 8, R: 24, bs: 4, kvb: tensor.F16,
			chunks: [][]int{{4, 4}, {1, 1}, {2, 3}}, tol: 1e-4},
	} {
		t.Run(c.name, func(t *testing.T) { checkMLAKernel(t, c) })
	}
}

func checkMLAKernel(t *testing.T, c mlaCase) {
	const V = 32
	g := mlaGraph(t, c)
	rng := rand.New(rand.NewPCG(uint64(c.H*1000+c.R), 9))
	rnd := func(name string, sd float64, shape ...int) *tensor.Tensor {
		return f32T(name, shape, func(int) float32 { return float32(rng.NormFloat64() * sd) })
	}
	ws := map[string]*tensor.Tensor{"q": rnd("q", 1, V, c.H*(c.nope+c.rope)), "c": rnd("c", 1, V, c.R),
		"kpe": rnd("kpe", 1, V, c.rope), "kvb": rnd("kvb", 0.3, c.H*(c.nope+c.vd), c.R)}
	if c.kvb != tensor.F32 {
		w, err := tensor.Convert(ws["kvb"], c.kvb)
		if err != nil {
			t.Fatal(err)
		}
		ws["kvb"] = w
	}
	p, err := exec.Compile(g, ws, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nseq := len(c.chunks[0])
	lens := make([]int, nseq)
	for _, step := range c.chunks {
		for i, k := range step {
			lens[i] += k
		}
	}
	// Each sequence's tokens, and a block table of scattered blocks covering it.
	seqs := make([][]int, nseq)
	tables := make([][]int32, nseq)
	perm := rng.Perm(64)
	next := 0
	for i := range seqs {
		for j := 0; j < lens[i]; j++ {
			seqs[i] = append(seqs[i], rng.IntN(V))
		}
		for b := 0; b*c.bs < lens[i]; b++ {
			tables[i] = append(tables[i], int32(perm[next]))
			next++
		}
	}
	kv := exec.KV{K: [][]float32{make([]float32, 64*c.bs*(c.R+c.rope))}, V: [][]float32{nil}, BlockSize: c.bs}
	got := make([][]float32, nseq)
	done := make([]int, nseq)
	for _, step := range c.chunks {
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
		w := c.H * c.vd
		for r, i := range owner {
			got[i] = append(got[i], out[r*w:(r+1)*w]...)
		}
	}
	// The reference over the whole sequences, one after another.
	vals := map[string]*ref.Tensor{}
	for name, w := range ws {
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
	want, err := ref.Run(g, vals)
	if err != nil {
		t.Fatal(err)
	}
	var flat []float32
	for _, o := range got {
		flat = append(flat, o...)
	}
	if len(flat) != len(want[0].F) {
		t.Fatalf("%d outputs, reference %d", len(flat), len(want[0].F))
	}
	var big, diff float64
	for i, w := range want[0].F {
		big = math.Max(big, math.Abs(w))
		diff = math.Max(diff, math.Abs(float64(flat[i])-w))
	}
	t.Logf("%d sequences of %v tokens, blocks of %d: max |kernel - ref| %.3g (largest |output| %.3g)", nseq, lens, c.bs, diff, big)
	if big < 0.1 || diff > c.tol*big {
		t.Fatalf("max |kernel - ref| %.3g, largest |output| %.3g (tolerance %.3g relative)", diff, big, c.tol)
	}
}
