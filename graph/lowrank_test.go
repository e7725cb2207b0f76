package graph_test

import (
	"math"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/ref"
	"github.com/llmcloud/llmcloud/tensor"
)

// WithLowRank adds s·(x·Aᵀ)·Bᵀ to the adapted matmul only, leaves the input graph unchanged,
// and refuses an adapter no matmul uses.
func TestWithLowRank(t *testing.T) {
	f32 := func(d ...int) graph.Type { return graph.T(tensor.F32, graph.Dims(d...)...) }
	b := graph.NewBuilder("lr")
	x := b.Weight("x", f32(3, 4))
	w, v := b.Weight("w", f32(5, 4)), b.Weight("v", f32(2, 5))
	b.Output(b.Op("matmul", nil, b.Op("matmul", nil, x, w), v))
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	n0 := len(g.Nodes)
	lg, err := graph.WithLowRank(g, map[string]graph.LowRank{"w": {A: "w.a", B: "w.b", Rank: 2, Scale: 1.5}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != n0 || len(lg.Nodes) != n0+4 {
		t.Fatalf("nodes: input %d (was %d), adapted %d", len(g.Nodes), n0, len(lg.Nodes))
	}
	val := func(n int, k float32) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(math.Sin(float64(k) * float64(i+1)))
		}
		return out
	}
	X, W, V, A, B := val(12, 1), val(20, 2), val(10, 3), val(8, 4), val(10, 5)
	vals := map[string]*ref.Tensor{"x": ref.FromF32([]int{3, 4}, X), "w": ref.FromF32([]int{5, 4}, W), "v": ref.FromF32([]int{2, 5}, V),
		"w.a": ref.FromF32([]int{2, 4}, A), "w.b": ref.FromF32([]int{5, 2}, B)}
	out, err := ref.Run(lg, vals)
	if err != nil {
		t.Fatal(err)
	}
	for r := range 3 {
		h := make([]float64, 5)
		for o := range 5 {
			for i := range 4 {
				h[o] += float64(X[r*4+i]) * float64(W[o*4+i])
			}
			for k := range 2 {
				var xa float64
				for i := range 4 {
					xa += float64(X[r*4+i]) * float64(A[k*4+i])
				}
				h[o] += 1.5 * xa * float64(B[o*2+k])
			}
		}
		for c := range 2 {
			var want float64
			for o := range 5 {
				want += h[o] * float64(V[c*5+o])
			}
			if got := out[0].F[r*2+c]; math.Abs(got-want) > 1e-9 {
				t.Fatalf("out[%d,%d] = %g, want %g", r, c, got, want)
			}
		}
	}
	if _, err := graph.WithLowRank(g, map[string]graph.LowRank{"x": {A: "x.a", B: "x.b", Rank: 1, Scale: 1}}); err == nil || !strings.Contains(err.Error(), "no matmul") {
		t.Fatalf("an adapter of a weight no matmul multiplies by: %v", err)
	}
}
