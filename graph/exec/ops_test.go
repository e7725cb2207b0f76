// The element-wise and row-wise ops the Llama graphs do not use (softmax, scale, softcap, mul
// with broadcast, silu alone, gather_rows, rope unfused) against plain float64 arithmetic.
package exec_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

func f32T(name string, shape []int, f func(i int) float32) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f(i)))
	}
	return &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: b}
}

func TestUnfusedOps(t *testing.T) {
	const V, D = 5, 6
	n := graph.Sym("n")
	b := graph.NewBuilder("ops")
	tok := b.Input(exec.InputTokens, graph.T(tensor.I32, n))
	b.Input(exec.InputPositions, graph.T(tensor.I32, n))
	rows := b.Input(exec.InputLogitRows, graph.T(tensor.I32, graph.Sym("s")))
	e := b.Weight("e", graph.T(tensor.F32, graph.D(V), graph.D(D)))
	w := b.Weight("w", graph.T(tensor.F32, graph.D(D)))
	x := b.Op("embedding", nil, e, tok)
	y := b.Op("mul", nil, x, w)                                // broadcast over rows
	y = b.Op("scale", graph.Attrs{"by": graph.Float(3)}, y)    // 3xw
	y = b.Op("softcap", graph.Attrs{"cap": graph.Float(2)}, y) // 2 tanh(3xw/2)
	y = b.Op("add", nil, y, b.Op("silu", nil, x))              // + silu(x)
	y = b.Op("softmax", nil, y)                                // per row
	b.Output(b.Op("gather_rows", nil, y, rows))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ev := func(i int) float32 { return float32(i%7)*0.3 - 0.8 }
	wv := func(i int) float32 { return 0.5 + 0.1*float32(i) }
	p, err := exec.Compile(g, map[string]*tensor.Tensor{"e": f32T("e", []int{V, D}, ev), "w": f32T("w", []int{D}, wv)},
		exec.Options{Pool: kernels.Serial})
	if err != nil {
		t.Fatal(err)
	}
	toks := []int{3, 1, 4}
	st := &exec.Step{Tokens: toks, LogitRows: []int{2, 0}, KV: exec.KV{BlockSize: 1}}
	for i := range toks {
		st.Rows = append(st.Rows, kernels.PagedRow{Pos: i})
	}
	got, err := p.Run(st)
	if err != nil {
		t.Fatal(err)
	}
	for j, r := range st.LogitRows {
		want := make([]float64, D)
		var sum float64
		for d := range D {
			xv := float64(ev(toks[r]*D + d))
			v := 2*math.Tanh(3*xv*float64(wv(d))/2) + xv/(1+math.Exp(-xv))
			want[d] = math.Exp(v)
			sum += want[d]
		}
		for d := range D {
			if g := float64(got[j*D+d]); math.Abs(g-want[d]/sum) > 1e-5 {
				t.Errorf("row %d [%d] = %v, want %v", r, d, g, want[d]/sum)
			}
		}
	}
}
