package kernels

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkGemmF16SmallM compares the F16 GEMM of a few rows (speculative verification,
// m = 2..8) on the packs with the main kernels (old) and with the small-m kernels of
// bzSmall (new), and the one-row decode (gemv, the stored rows), on the target model's shapes,
// weights from DRAM (copies filling 96 MiB, used in turn). Each iteration runs each variant
// once, alternating; reported: weight GB/s of each one's fastest run (with 1 thread, by the
// thread's CPU time) and new/old.
func BenchmarkGemmF16SmallM(b *testing.B) {
	if !useAVX512 {
		b.Skip("no AVX-512")
	}
	defer func(v bool) { useBzSmall = v }(useBzSmall)
	r := rand.New(rand.NewSource(1))
	pools := map[int]*Pool{1: NewPool(1), 2: NewPool(2)}
	for _, s := range [][2]int{{512, 512}, {1408, 512}, {512, 1408}, {4096, 512}} {
		n, k := s[0], s[1]
		w, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
		ws := []*tensor.Tensor{w}
		for len(ws)*len(w.Data) < 96<<20 {
			c := *w
			c.Data = append([]byte(nil), w.Data...)
			ws = append(ws, &c)
		}
		for _, t := range ws {
			PrepackF16(t)
			f16PackOf(Default, t)
		}
		for _, m := range []int{2, 5, 8} {
			x := randVec(r, m*k, 1)
			out := make([]float32, m*n)
			for _, th := range []int{1, 2} {
				p := pools[th]
				b.Run(fmt.Sprintf("%dx%d/m=%d/t=%d", n, k, m, th), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					best := [3]time.Duration{1 << 62, 1 << 62, 1 << 62}
					i := 0
					for b.Loop() {
						for v := range best {
							useBzSmall = v == 1
							mm := m
							if v == 2 {
								mm = 1
							}
							i++
							t0, c0 := time.Now(), threadCPU()
							p.MatMul(out, x, ws[i%len(ws)], mm)
							d := time.Since(t0)
							if th == 1 {
								d = time.Duration((threadCPU() - c0) * 1e9)
							}
							best[v] = min(best[v], d)
						}
					}
					by := 2 * float64(n*k) / 1e9
					b.ReportMetric(by/best[0].Seconds(), "old-GB/s")
					b.ReportMetric(by/best[1].Seconds(), "new-GB/s")
					b.ReportMetric(by/best[2].Seconds(), "gemv-GB/s")
					b.ReportMetric(best[0].Seconds()/best[1].Seconds(), "new/old")
				})
			}
		}
		for _, t := range ws {
			DropPackF16(t)
		}
	}
}
