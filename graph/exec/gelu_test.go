package exec_test

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// TestGeluOps checks gelu and geglu against the tanh-approximation formula in float64.
func TestGeluOps(t *testing.T) {
	const V, D = 7, 9
	n := graph.Sym("n")
	b := graph.NewBuilder("gelu")
	tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
	b.Input(exec.InputPositions, graph.T(tensor.I32, n))
	rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
	e := b.Weight("e", graph.T(tensor.F32, graph.D(V), graph.D(D)))
	w := b.Weight("w", graph.T(tensor.F32, graph.D(D)))
	x := b.Op("embedding", nil, e, tok)
	u := b.Op("mul", nil, x, w)
	y := b.Op("add", nil, b.Op("geglu", nil, x, u), b.Op("gelu", nil, u)) // gelu(x)·xw + gelu(xw)
	b.Output(b.Op("gather_rows", nil, y, rows))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ev := func(i int) float32 { return float32(i%11)*0.9 - 4.5 }
	wv := func(i int) float32 { return 1.5 - 0.3*float32(i) }
	p, err := exec.Compile(g, map[string]*tensor.Tensor{"e": f32T("e", []int{V, D}, ev), "w": f32T("w", []int{D}, wv)},
		exec.Options{Pool: kernels.Serial})
	if err != nil {
		t.Fatal(err)
	}
	gelu := func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) }
	toks := []int{3, 1, 6, 0}
	st := &exec.Step{Tokens: toks, LogitRows: []int{0, 1, 2, 3}, KV: exec.KV{BlockSize: 1}}
	for i := range toks {
		st.Rows = append(st.Rows, kernels.PagedRow{Pos: i})
	}
	got, err := p.Run(st)
	if err != nil {
		t.Fatal(err)
	}
	for r, tk := range toks {
		for d := range D {
			xv := float64(ev(tk*D + d))
			uv := float64(float32(xv) * wv(d))
			want := gelu(xv)*uv + gelu(uv)
			if g := float64(got[r*D+d]); math.Abs(g-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Errorf("row %d [%d] = %v, want %v", r, d, g, want)
			}
		}
	}
}
