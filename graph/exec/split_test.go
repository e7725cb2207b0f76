// split (the pieces of a fused projection) and rope with mscale (LongRoPE's attention factor)
// against plain float64 arithmetic.
package exec_test

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

func TestSplitAndRopeMscale(t *testing.T) {
	const V, D, mscale = 5, 7, 1.5
	ev := func(i int) float32 { return float32(i%11)*0.2 - 0.9 }
	toks := []int{3, 1, 4}
	for piece, width := range []int{3, 4} {
		n := graph.Sym("n")
		b := graph.NewBuilder("split")
		tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
		pos := b.Input(exec.InputPositions, graph.T(tensor.I32, n))
		rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
		e := b.Weight("e", graph.T(tensor.F32, graph.D(V), graph.D(D)))
		x := b.Op("embedding", nil, e, tok)
		parts := b.OpN("split", graph.Attrs{"sizes": graph.IntList(3, 4)}, []*graph.Value{x})
		y := parts[piece]
		if piece == 1 {
			y = b.Op("rope", graph.Attrs{"heads": graph.Int(1), "head_dim": graph.Int(4), "theta": graph.Float(100),
				"neox": graph.Int(1), "mscale": graph.Float(mscale)}, y, pos)
		}
		b.Output(b.Op("gather_rows", nil, y, rows))
		g, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		p, err := exec.Compile(g, map[string]*tensor.Tensor{"e": f32T("e", []int{V, D}, ev)}, exec.Options{Pool: kernels.Serial})
		if err != nil {
			t.Fatal(err)
		}
		st := &exec.Step{Tokens: toks, LogitRows: []int{0, 1, 2}, KV: exec.KV{BlockSize: 1}}
		for i := range toks {
			st.Rows = append(st.Rows, kernels.PagedRow{Pos: i})
		}
		got, err := p.Run(st)
		if err != nil {
			t.Fatal(err)
		}
		for r, tk := range toks {
			want := make([]float64, width)
			for j := range want {
				want[j] = float64(ev(tk*D + 3*piece + j))
			}
			if piece == 1 { // neox pairs (0,2), (1,3); θ_i = r * 100^(-2i/4)
				w := append([]float64(nil), want...)
				for i := 0; i < 2; i++ {
					th := float64(r) * math.Pow(100, -float64(2*i)/4)
					c, s := mscale*math.Cos(th), mscale*math.Sin(th)
					want[i], want[i+2] = w[i]*c-w[i+2]*s, w[i]*s+w[i+2]*c
				}
			}
			for j := range want {
				if g := float64(got[r*width+j]); math.Abs(g-want[j]) > 1e-5 {
					t.Errorf("piece %d row %d [%d] = %v, want %v", piece, r, j, g, want[j])
				}
			}
		}
	}
}
