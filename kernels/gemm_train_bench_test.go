// This file benchmarks Gemm on the trainer's three products at GPT-2-124M-like shapes (B*T =
// 256 rows, dim 768, ffn 2048), against the plain-Go path, and the FMA peak; each reports
// GFLOP/s, and the Gemm benchmarks also GFLOP per CPU-second of the process (what one core
// delivers while it runs: the machine may be shared, so wall time says little). Run: go test ./kernels -run X -bench 'GemmTrain|PeakFLOPS'
package kernels

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

func BenchmarkGemmTrain(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const rows = 256
	for _, sh := range [][2]int{{768, 768}, {768, 2048}, {2048, 768}, {768, 8192}} {
		in, out := sh[0], sh[1]
		x, w, dy := gemmOperand(r, rows, in, false), gemmOperand(r, out, in, false), gemmOperand(r, rows, out, false)
		for _, c := range []struct {
			name    string
			m, n, k int
			a, b    Mat
			ldc     int
		}{
			{"fwd_XWt", rows, out, in, x, Mat{Data: w.Data, Stride: w.Stride, T: true}, out},
			{"dX_dYW", rows, in, out, dy, w, in},
			{"dW_dYtX", out, in, rows, Mat{Data: dy.Data, Stride: dy.Stride, T: true}, x, in},
		} {
			cbuf := make([]float32, c.m*c.ldc)
			for _, ref := range []bool{false, true} {
				name := fmt.Sprintf("%s/%dx%d/asm", c.name, in, out)
				if ref {
					if in*out > 768*768 {
						continue
					}
					name = fmt.Sprintf("%s/%dx%d/go", c.name, in, out)
				}
				b.Run(name, func(b *testing.B) {
					Reference = ref
					defer func() { Reference = false }()
					flops := 2 * float64(c.m) * float64(c.n) * float64(c.k)
					cpu0 := cpuSeconds()
					for b.Loop() {
						Default.Gemm(c.m, c.n, c.k, c.a, c.b, cbuf, c.ldc, true)
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(flops*float64(b.N)/(cpuSeconds()-cpu0)/1e9, "GFLOP/cpu-s")
				})
			}
		}
	}
}

func BenchmarkPeakFLOPS(b *testing.B) {
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprint(th, "threads"), func(b *testing.B) {
			var f float64
			for b.Loop() {
				f = PeakFLOPS(th)
			}
			b.ReportMetric(f/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGemmTrainMicro runs each micro-kernel alone on L1-resident panels (kc = 256): the
// ceiling of the packed Gemm on one core. It reports the mean rate, the rate per CPU-second
// and, because the machine may be shared, the best rate over bursts of 100 calls.
func BenchmarkGemmTrainMicro(b *testing.B) {
	for _, kr := range trainKernels() {
		b.Run(kr.name, func(b *testing.B) {
			a, bp, c := make([]float32, kr.mr*trainKC), make([]float32, kr.nr*trainKC), make([]float32, kr.mr*kr.nr)
			flops := float64(2 * kr.mr * kr.nr * trainKC * 100)
			best := 0.0
			cpu0 := cpuSeconds()
			for b.Loop() {
				t0 := time.Now()
				for range 100 {
					kr.fn(trainKC, &a[0], 4, 4*kr.mr, &bp[0], 4*kr.nr, &c[0], 4*kr.nr, 1)
				}
				best = max(best, flops/time.Since(t0).Seconds())
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(best/1e9, "bestGFLOP/s")
			b.ReportMetric(flops*float64(b.N)/(cpuSeconds()-cpu0)/1e9, "GFLOP/cpu-s")
		})
	}
}

// cpuSeconds is the user+system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
