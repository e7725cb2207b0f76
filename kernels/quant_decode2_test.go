package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestMatMulDecodes checks that MatMulDecodes gives each token what MatMul with one token
// gives it, bit for bit: Q8_0 and Q4_0 weights (and F32, which runs one MatMul per token), row
// counts that leave rows outside the streams' parts, one to three workers, two to nine tokens.
// On the VNNI decode kernels two to four tokens run the T-token kernels (q8_0Rows4T2,
// q4_0Rows2T4, ...), five to eight four plus the rest chunk by chunk (chunks of 16 and 3 row
// groups), nine one MatMul each.
func TestMatMulDecodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.F32} {
		for _, n := range []int{1, 3, 17, 203, 1024} {
			for _, k := range []int{64, 128, 384, 2048} {
				var w *tensor.Tensor
				if dt == tensor.F32 {
					w = f32Tensor("w", []int{n, k}, qRandVec(rng, n*k, 0.1))
				} else {
					w = randQuant(t, rng, dt, n, k)
				}
				for _, m := range []int{2, 3, 4, 5, 6, 7, 8, 9} {
					x := qRandVec(rng, m*k, 1)
					for _, workers := range []int{1, 2, 3} {
						p := NewPool(workers)
						splitChunk = 16
						if workers == 3 {
							splitChunk = 3 // chunks that end inside a take
						}
						got := make([]float32, m*n+5)
						for i := range got {
							got[i] = float32(math.NaN())
						}
						if err := p.MatMulDecodes(got, x, w, m); err != nil {
							t.Fatal(err)
						}
						want := make([]float32, n)
						for tok := 0; tok < m; tok++ {
							if err := p.MatMul(want, x[tok*k:(tok+1)*k], w, 1); err != nil {
								t.Fatal(err)
							}
							for r := range want {
								if math.Float32bits(got[tok*n+r]) != math.Float32bits(want[r]) {
									t.Fatalf("%s %dx%d m=%d workers %d: token %d row %d = %v, one-token MatMul %v", dt, n, k, m, workers, tok, r, got[tok*n+r], want[r])
								}
							}
						}
						for i := m * n; i < len(got); i++ {
							if !math.IsNaN(float64(got[i])) {
								t.Fatalf("%s %dx%d m=%d: wrote past the results (slot %d)", dt, n, k, m, i)
							}
						}
					}
				}
			}
		}
	}
	splitChunk = 16
	if err := Default.MatMulDecodes(make([]float32, 3), make([]float32, 4), f32Tensor("w", []int{2, 4}, make([]float32, 8)), 2); err == nil {
		t.Fatal("short x: no error")
	}
}
