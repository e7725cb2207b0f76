package exec_test

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// TestSwigluOAI checks the kernel against the formula (transformers' GptOssExperts: gate
// clamped above, up clamped both ways, glu = gate·sigmoid(alpha·gate), (up+1)·glu), over
// values crossing both limits, and against graph/ref; default and other alpha/limit.
func TestSwigluOAI(t *testing.T) {
	const V, D = 9, 16
	for _, at := range []graph.Attrs{nil, {"alpha": graph.Float(1.1), "limit": graph.Float(2.5)}} {
		n := graph.Sym("n")
		b := graph.NewBuilder("swiglu_oai")
		tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
		b.Input(exec.InputPositions, graph.T(tensor.I32, n))
		rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
		eg := b.Weight("eg", graph.T(tensor.F32, graph.D(V), graph.D(D)))
		eu := b.Weight("eu", graph.T(tensor.F32, graph.D(V), graph.D(D)))
		y := b.Op("swiglu_oai", at, b.Op("embedding", nil, eg, tok), b.Op("embedding", nil, eu, tok))
		b.Output(b.Op("gather_rows", nil, y, rows))
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		gv := func(i int) float32 { return float32(i%23)*0.85 - 9.7 }
		uv := func(i int) float32 { return 10.3 - float32(i%19)*1.1 }
		ws := map[string]*tensor.Tensor{"eg": f32T("eg", []int{V, D}, gv), "eu": f32T("eu", []int{V, D}, uv)}
		p, err := exec.Compile(g, ws, exec.Options{Pool: kernels.Serial})
		if err != nil {
			t.Fatal(err)
		}
		toks := []int{3, 1, 8, 0, 5}
		st := &exec.Step{Tokens: toks, LogitRows: []int{0, 1, 2, 3, 4}, KV: exec.KV{BlockSize: 1}}
		for i := range toks {
			st.Rows = append(st.Rows, kernels.PagedRow{Pos: i})
		}
		got, err := p.Run(st)
		if err != nil {
			t.Fatal(err)
		}
		alpha, limit := at.Float("alpha", 1.702), at.Float("limit", 7)
		for r, tk := range toks {
			for d := range D {
				gg, uu := float64(gv(tk*D+d)), float64(uv(tk*D+d))
				gate := math.Min(gg, limit)
				up := math.Min(math.Max(uu, -limit), limit)
				want := (up + 1) * (gate * (1 / (1 + math.Exp(-gate*alpha))))
				if w2 := ref.SwigluOAI(gg, uu, alpha, limit); math.Abs(w2-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Fatalf("ref %v, formula %v", w2, want)
				}
				if g := float64(got[r*D+d]); math.Abs(g-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Errorf("%v: row %d [%d] (g %v, u %v) = %v, want %v", at, r, d, gg, uu, g, want)
				}
			}
		}
	}
}
