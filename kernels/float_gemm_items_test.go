package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestMatMulSharedF16Items checks that MatMulShared's one-job run of several F16 weights (with
// a Q8_0 weight among them when k allows) gives the same bits as MatMul on each weight, for m
// on both sides of gemmDirectMaxM, row counts across item and group tails, k with and
// without the 8-column tail, on 2 and 3 workers.
func TestMatMulSharedF16Items(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	pools := []*Pool{NewPool(2), NewPool(3)}
	for _, k := range []int{1037, 1056} {
		var ws []*tensor.Tensor
		for i, n := range []int{389, 64, 7, 200} {
			dt := tensor.F16
			if i == 2 && k%32 == 0 {
				dt = tensor.Q8_0
			}
			w, err := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), dt)
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, w)
		}
		for _, m := range []int{2, 5, 64, 65, 130} {
			x := randVec(r, m*k, 1)
			for _, p := range pools {
				outs := make([][]float32, len(ws))
				for i, w := range ws {
					outs[i] = make([]float32, m*w.Shape[0])
					for j := range outs[i] {
						outs[i][j] = float32(math.NaN()) // must be overwritten
					}
				}
				if err := p.MatMulShared(outs, x, ws, m); err != nil {
					t.Fatal(err)
				}
				for i, w := range ws {
					want := make([]float32, m*w.Shape[0])
					if err := Serial.MatMul(want, x, w, m); err != nil {
						t.Fatal(err)
					}
					for j := range want {
						if math.Float32bits(outs[i][j]) != math.Float32bits(want[j]) {
							t.Fatalf("k=%d m=%d workers=%d weight %d (%v): out[%d] = %v, MatMul %v", k, m, p.Workers(), i, w.Type, j, outs[i][j], want[j])
						}
					}
				}
			}
		}
	}
}
