package calib

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

func tinyModel(t *testing.T) *model.Model {
	t.Helper()
	o := synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 260, CtxLen: 64, Seed: 5, Std: 0.2}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	ws := map[string]*tensor.Tensor{}
	for _, pt := range p.Tensors {
		x, err := pt.Load()
		if err != nil {
			t.Fatal(err)
		}
		ws[pt.Name] = x
	}
	m, err := model.New(p.Config, ws)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-4*math.Max(1, math.Abs(b)) }

// TestStatsMatchPlain: the statistics of layer 0's q/k/v input (the RMS-normed embeddings)
// equal a plain computation; every linear weight has stats; q/k/v and gate/up share theirs.
func TestStatsMatchPlain(t *testing.T) {
	m := tinyModel(t)
	const ctx, chunks = 16, 3
	ids := make([]int, ctx*chunks+5)
	for i := range ids {
		ids[i] = (i*7 + 3) % m.Config.Vocab
	}
	const bos = 1
	c, err := Run(m, ids, bos, Options{Ctx: ctx, Hessian: true, Samples: 10})
	if err != nil {
		t.Fatal(err)
	}
	for l := 0; l < m.Config.Layers; l++ {
		for _, w := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} {
			s := c.ByW[fmtW(l, w)]
			if s == nil || s.Rows != ctx*chunks || s.Calls != chunks {
				t.Fatalf("%s: stats %+v", fmtW(l, w), s)
			}
		}
		if c.ByW[fmtW(l, "attn_q")] != c.ByW[fmtW(l, "attn_v")] || c.ByW[fmtW(l, "ffn_gate")] != c.ByW[fmtW(l, "ffn_up")] {
			t.Errorf("layer %d: q/v or gate/up do not share their input's stats", l)
		}
	}
	if s := c.ByW["output.weight"]; s == nil || s.Rows != ctx*chunks { // the head sees every row
		t.Errorf("the output head's stats: %+v", s)
	}
	emb, _ := m.Weights["token_embd.weight"].Float32()
	g, _ := m.Weights["blk.0.attn_norm.weight"].Float32()
	k := m.Config.Dim
	sumSq, sumAbs := make([]float64, k), make([]float64, k)
	h := make([]float64, k*k)
	for ch := 0; ch < chunks; ch++ {
		for j := 0; j < ctx; j++ {
			tok := ids[ch*ctx+j]
			if j == 0 {
				tok = bos
			}
			e := emb[tok*k : tok*k+k]
			var ms float64
			for _, v := range e {
				ms += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ms/float64(k)+float64(m.Config.NormEps))
			x := make([]float64, k)
			for i := range x {
				x[i] = float64(e[i]) * inv * float64(g[i])
				sumSq[i] += x[i] * x[i]
				sumAbs[i] += math.Abs(x[i])
			}
			for i := range x {
				for jj := range x {
					h[i*k+jj] += x[i] * x[jj]
				}
			}
		}
	}
	s := c.ByW["blk.0.attn_q.weight"]
	for i := 0; i < k; i++ {
		if !near(s.SumSq[i], sumSq[i]) || !near(s.SumAbs[i], sumAbs[i]) {
			t.Fatalf("column %d: sum sq %g (plain %g), sum |x| %g (plain %g)", i, s.SumSq[i], sumSq[i], s.SumAbs[i], sumAbs[i])
		}
		for j := 0; j < k; j++ {
			if !near(s.H[i*k+j], h[i*k+j]) {
				t.Fatalf("H[%d,%d] = %g, plain %g", i, j, s.H[i*k+j], h[i*k+j])
			}
		}
	}
	if len(s.Samples) != 10*k {
		t.Errorf("%d sample values, want %d", len(s.Samples), 10*k)
	}
	// The imatrix file round-trips.
	path := filepath.Join(t.TempDir(), "im.dat")
	im := c.Imatrix("calib.txt")
	if err := im.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadImatrix(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Dataset != "calib.txt" || back.Chunks != chunks || len(back.Values) != len(im.Values) {
		t.Fatalf("read back %q, %d chunks, %d entries", back.Dataset, back.Chunks, len(back.Values))
	}
	for n, v := range im.Values {
		for i := range v {
			if !near(float64(back.Values[n][i]), float64(v[i])) {
				t.Fatalf("%s[%d]: %g, wrote %g", n, i, back.Values[n][i], v[i])
			}
		}
	}
}

func fmtW(l int, w string) string { return "blk." + string(rune('0'+l)) + "." + w + ".weight" }

func TestTooShort(t *testing.T) {
	m := tinyModel(t)
	if _, err := Run(m, make([]int, 10), 1, Options{Ctx: 16}); err == nil {
		t.Fatal("10 tokens for chunks of 16: no error")
	}
}
