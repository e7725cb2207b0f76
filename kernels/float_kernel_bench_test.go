package kernels

import (
	"math/rand"
	"testing"
)

// BenchmarkGemmMicroKernel runs the largest micro-kernel tile of each family (AVX2 3x4,
// AVX-512 4x6) on L1-resident operands (k = 512): the GEMM's single-core ceiling.
func BenchmarkGemmMicroKernel(b *testing.B) {
	const k = 512
	for _, c := range []struct {
		name string
		ok   bool
		ts   *floatTiles
	}{{"avx2", useFloatAsm, &avx2Tiles}, {"avx512", useAVX512, &avx512Tiles}} {
		b.Run(c.name, func(b *testing.B) {
			if !c.ok {
				b.Skip("not on this CPU")
			}
			r := rand.New(rand.NewSource(1))
			mr, nr := c.ts.mr, c.ts.nr
			a, w := randVec(r, mr*k, 1), randVec(r, nr*k, 1)
			out := make([]float32, mr*8)
			for b.Loop() {
				for range 16 {
					c.ts.f32[mr][nr](&a[0], 4*k, &w[0], 4*k, k, &out[0], 32, 1)
				}
			}
			b.ReportMetric(16*2*float64(mr*nr*k*b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
