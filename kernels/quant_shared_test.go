package kernels

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestMatMulShared checks that MatMulShared gives, bit for bit, what MatMul gives on each
// weight (mixed quantized and float types, decode and prefill shapes), and that bad calls are
// refused with an error.
func TestMatMulShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const k = 512
	var ws []*tensor.Tensor
	for i, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K, tensor.Q8_0, tensor.F32} {
		ws = append(ws, randQuant(t, rng, dt, 37+8*i, k))
	}
	pool := NewPool(2)
	for _, m := range []int{1, 5, 33} {
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
			if err := pool.MatMul(want, x, w, m); err != nil {
				t.Fatal(err)
			}
			for j := range want {
				if outs[i][j] != want[j] {
					t.Fatalf("m=%d weight %d (%s) out[%d] = %g, MatMul gives %g", m, i, w.Type, j, outs[i][j], want[j])
				}
			}
		}
	}
	x := qRandVec(rng, 2*k, 1)
	other := randQuant(t, rng, tensor.Q8_0, 4, 256)
	for _, c := range []struct {
		outs [][]float32
		ws   []*tensor.Tensor
		want string
	}{
		{[][]float32{make([]float32, 2*37)}, ws[:2], "2 weights"},
		{[][]float32{make([]float32, 2*37), make([]float32, 3)}, ws[:2], "out 3"},
		{[][]float32{make([]float32, 2*37), make([]float32, 8)}, []*tensor.Tensor{ws[0], other}, "k=256"},
	} {
		err := pool.MatMulShared(c.outs, x, c.ws, 2)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("MatMulShared: error %v, want one mentioning %q", err, c.want)
		}
	}
}
