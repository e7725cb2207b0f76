package kernels

import (
	"math/rand"
	"testing"
)

// BenchmarkGemmMicroKernel runs the 3x4 micro-kernel on L1-resident operands (k = 512):
// the single-core ceiling of the GEMM.
func BenchmarkGemmMicroKernel(b *testing.B) {
	if !useFloatAsm {
		b.Skip("no AVX2")
	}
	const k = 512
	r := rand.New(rand.NewSource(1))
	a, w := randVec(r, 3*k, 1), randVec(r, 4*k, 1)
	c := make([]float32, 12)
	for b.Loop() {
		for range 16 {
			gemmF32Kernels[3][4](&a[0], 4*k, &w[0], 4*k, k, &c[0], 16, 1)
		}
	}
	b.ReportMetric(16*2*12*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
