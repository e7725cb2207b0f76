package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkW8A8Prefill: the W8A8 int8 GEMM against the Q8_0 prefill path on TinyLlama's
// shapes, in one run, modes alternated over three rounds: q8_0 = MatMul on a Q8_0 weight
// (the default kernels of this CPU), w8a8 = the W8A8 kernels installed (AMX tiles where the
// CPU has them, else VNNI or AVX2), w8a8_vnni = the VNNI W8A8 kernels with AMX off, w8a8_avx2 =
// the AVX2 W8A8 kernels. GOP/s = 2·m·n·k per second; with 1 thread also per
// second of the thread's CPU time (less disturbed by other jobs). Activation quantization is
// included in every mode.
func BenchmarkW8A8Prefill(b *testing.B) {
	shapes := [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}}
	for _, m := range []int{64, 512} {
		for _, sh := range shapes {
			n, k := sh[0], sh[1]
			q8 := randQuantFast(b, tensor.Q8_0, n, k)
			w8, _ := w8Weight(rand.New(rand.NewPCG(3, 4)), n, k)
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), m*k, 1)
			out := make([]float32, m*n)
			for _, th := range []int{1, 2} {
				p := NewPool(th)
				for round := 0; round < 3; round++ {
					for _, mode := range []string{"q8_0", "w8a8", "w8a8_vnni", "w8a8_avx2"} {
						if mode == "w8a8_avx2" && w8AVX2.g1p8 == nil || mode == "w8a8_vnni" && (w8AMX2 == nil || w8VNNI.g1p8 == nil) {
							continue
						}
						w := q8
						if mode != "q8_0" {
							w = w8
						}
						name := fmt.Sprintf("%dx%d/m%d/t%d/%s/r%d", n, k, m, th, mode, round)
						b.Run(name, func(b *testing.B) {
							if mode == "w8a8_avx2" {
								old := w8Active
								w8Active = w8AVX2
								defer func() { w8Active = old }()
							}
							if mode == "w8a8_vnni" || mode == "w8a8_avx2" {
								useAMX = false
								defer func() { useAMX = true }()
							}
							benchW8(b, p, out, x, w, m, th)
						})
					}
				}
			}
		}
	}
}

func benchW8(b *testing.B, p *Pool, out, x []float32, w *tensor.Tensor, m, th int) {
	if err := p.MatMul(out, x, w, m); err != nil { // packs made outside the timing
		b.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for b.Loop() {
		if err := p.MatMul(out, x, w, m); err != nil {
			b.Fatal(err)
		}
	}
	n, k := w.Shape[0], w.Shape[1]
	ops := 2 * float64(m*n*k) * float64(b.N)
	b.ReportMetric(ops/b.Elapsed().Seconds()/1e9, "GOP/s")
	if th == 1 {
		b.ReportMetric(ops/(threadCPU()-cpu0)/1e9, "GOP/thread-s")
	}
}

// BenchmarkW8A8Peak: 16 independent register-only VPDPBUSD per iteration, the int8 peak of
// one core (GOP/s, 2 ops per multiply-add) that the tiles are measured against.
func BenchmarkW8A8Peak(b *testing.B) {
	if w8VNNI.g1p8 == nil {
		b.Skip("no AVX-512 VNNI")
	}
	const iters = 1 << 16
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for b.Loop() {
		w8PeakZ(iters)
	}
	ops := 2 * 64 * 16 * float64(iters) * float64(b.N)
	b.ReportMetric(ops/b.Elapsed().Seconds()/1e9, "GOP/s")
	b.ReportMetric(ops/(threadCPU()-cpu0)/1e9, "GOP/thread-s")
}
