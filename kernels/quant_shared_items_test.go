package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestMatMulSharedOneJob checks that MatMulShared over weights of one type (Q8_0, or Q4_0:
// the items of all weights in one pool job) gives, bit for bit, what MatMul gives on each
// weight, with several token chunks (m above tokenChunkZ) and odd row counts.
func TestMatMulSharedOneJob(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const k = 512
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		var ws []*tensor.Tensor
		for i := 0; i < 3; i++ {
			ws = append(ws, randQuant(t, rng, dt, 37+16*i, k))
		}
		for _, pool := range []*Pool{NewPool(2), NewPool(3)} {
			for _, m := range []int{2, 33, tokenChunkZ(k) + 7} {
				x := qRandVec(rng, m*k, 1)
				outs := make([][]float32, len(ws))
				for i, w := range ws {
					outs[i] = make([]float32, m*w.Shape[0])
				}
				if err := pool.MatMulShared(outs, x, ws, m); err != nil {
					t.Fatal(err)
				}
				for i, w := range ws {
					want := make([]float32, m*w.Shape[0])
					if err := Serial.MatMul(want, x, w, m); err != nil {
						t.Fatal(err)
					}
					for j := range want {
						if outs[i][j] != want[j] {
							t.Fatalf("%s m=%d %d workers weight %d out[%d] = %g, MatMul gives %g", dt, m, pool.Workers(), i, j, outs[i][j], want[j])
						}
					}
				}
			}
		}
	}
}
