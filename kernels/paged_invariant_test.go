package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestMatMulInvariant checks, for every weight dtype and ragged shapes, that row i of
// MatMulInvariant over m rows equals the row computed alone (m = 1), for m from 1 to 70
// (m = 70 takes the packed float GEMM), on the AVX2 and, where the CPU has it, AVX-512 kernels,
// F16 also on a pack (PrepackF16).
func TestMatMulInvariant(t *testing.T) {
	defer func(z bool) { useAVX512 = z }(useAVX512)
	for _, z := range avx512Modes() {
		useAVX512 = z
		testMatMulInvariant(t)
	}
}

func testMatMulInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		for _, shape := range [][2]int{{67, 256}, {130, 768}, {64, 172}, {40, 1040}} {
			n, k := shape[0], shape[1]
			if (dt.Quantized() && k%32 != 0) || ((dt == tensor.Q4_K || dt == tensor.Q6_K) && k%256 != 0) {
				continue
			}
			wf := make([]float32, n*k)
			for i := range wf {
				wf[i] = r.Float32()*2 - 1
			}
			w32 := &tensor.Tensor{Name: "w", Type: tensor.F32, Shape: []int{n, k}, Data: make([]byte, 4*n*k)}
			if err := tensor.QuantizeRow(tensor.F32, wf, w32.Data); err != nil {
				t.Fatal(err)
			}
			w, err := tensor.Convert(w32, dt)
			if err != nil {
				t.Fatal(err)
			}
			const M = 70
			x := make([]float32, M*k)
			for i := range x {
				x[i] = r.Float32()*2 - 1
			}
			checkInvariant(t, w, x, M, n, k)
			if dt == tensor.F16 && PrepackF16(w) { // the broadcast kernels over the pack
				checkInvariant(t, w, x, M, n, k)
				DropPackF16(w)
			}
		}
	}
}

// checkInvariant checks that row i of MatMulInvariant of x (M rows) and w over m rows equals
// the row computed alone.
func checkInvariant(t *testing.T, w *tensor.Tensor, x []float32, M, n, k int) {
	t.Helper()
	alone := make([]float32, M*n)
	for i := 0; i < M; i++ {
		if err := Default.MatMulInvariant(alone[i*n:(i+1)*n], x[i*k:(i+1)*k], w, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []int{2, 3, 4, 5, 8, 13, 64, 70} {
		out := make([]float32, m*n)
		if err := Default.MatMulInvariant(out, x, w, m); err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if out[i] != alone[i] {
				t.Fatalf("%v [%d %d]: m=%d row %d col %d: %v, alone %v", w.Type, n, k, m, i/n, i%n, out[i], alone[i])
			}
		}
	}
}
