package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestGemmStreamMatchesDirect checks that gemmStream (packed activation tiles and weight
// blocks) and gemmDirectF16 (prefetching) gives bit-identical results to gemmDirect, the plain AVX2 kernels on
// the stored rows, for m across tile remainders, n across group and block (192) tails and k
// across the k block (512) and the 8-column tail, on 1 and 3 workers. checkFloatMatMul
// (TestFloatMatMulShapes) compares both with the float64 product.
func TestGemmStreamMatchesDirect(t *testing.T) {
	if !useFloatAsm {
		t.Skip("no AVX2/FMA/F16C")
	}
	defer func(z bool) { useAVX512 = z }(useAVX512)
	useAVX512 = false
	r := rand.New(rand.NewSource(11))
	for _, s := range [][3]int{{2, 4, 8}, {3, 4, 8}, {4, 5, 16}, {5, 7, 17}, {6, 8, 520}, {7, 13, 1030}, {9, 196, 64}, {64, 200, 768}, {65, 389, 1037}, {70, 9, 7}, {100, 384, 2048}} {
		m, n, k := s[0], s[1], s[2]
		x := randVec(r, m*k, 1)
		w, err := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, m*n)
		gemmDirect(Serial, want, x, tensor.F16, w.Data, m, n, k)
		for _, p := range []*Pool{Serial, NewPool(3)} {
			for _, pw := range []bool{false, true} {
				got := make([]float32, m*n)
				for i := range got {
					got[i] = float32(math.NaN()) // gemmStream must overwrite, not accumulate
				}
				if pw {
					gemmStream(p, got, x, w.Data, m, n, k)
				} else {
					gemmDirectF16(p, got, x, w.Data, m, n, k)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("m=%d n=%d k=%d workers=%d stream=%v: out[%d,%d] = %v, gemmDirect %v", m, n, k, p.Workers(), pw, i/n, i%n, got[i], want[i])
					}
				}
			}
		}
	}
}
