package kernels

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkGemmF16Pack compares the AVX2 F16 GEMM on the stored rows (old: gemmDirectF16 for
// m <= 64, gemmStream above) with the broadcast kernels on packs made by PrepackF16 (coarse:
// with gemmDirectF16's item sizes; new: packItems' smaller items), on the weight shapes of
// stories110M and TinyLlama, weights from DRAM (copies filling 96 MiB, used in turn;
// F16HOT=1: one copy, cache-resident). Each iteration runs each variant once, alternating;
// reported: each one's fastest run in GFLOP/s (with 1 thread, by the thread's CPU time) and
// the ratios.
func BenchmarkGemmF16Pack(b *testing.B) {
	if !useFloatAsm || useAVX512 {
		b.Skip("AVX2 family only")
	}
	r := rand.New(rand.NewSource(1))
	pools := map[int]*Pool{1: NewPool(1), 2: NewPool(2)}
	for _, s := range gemmF16Shapes {
		n, k := s[0], s[1]
		w, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
		ws := []*tensor.Tensor{w}
		for os.Getenv("F16HOT") == "" && len(ws)*len(w.Data) < 96<<20 {
			c := *w
			c.Data = append([]byte(nil), w.Data...)
			ws = append(ws, &c)
		}
		for _, t := range ws {
			PrepackF16(t)
			f16PackOf(Default, t) // made now, not in the timed loop
		}
		for _, m := range []int{16, 64, 512} {
			x := randVec(r, m*k, 1)
			out := make([]float32, m*n)
			for _, th := range []int{1, 2} {
				p := pools[th]
				b.Run(fmt.Sprintf("%dx%d/m=%d/t=%d", n, k, m, th), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					defer func(v, g bool) { usePacks, packFineItems = v, g }(usePacks, packFineItems)
					best := [3]time.Duration{1 << 62, 1 << 62, 1 << 62}
					i := 0
					for b.Loop() {
						for v := range best {
							usePacks, packFineItems = v > 0, v == 2
							i++
							t0, c0 := time.Now(), threadCPU()
							p.MatMul(out, x, ws[i%len(ws)], m)
							d := time.Since(t0)
							if th == 1 {
								d = time.Duration((threadCPU() - c0) * 1e9)
							}
							best[v] = min(best[v], d)
						}
					}
					fl := 2 * float64(m*n*k) / 1e9
					b.ReportMetric(fl/best[0].Seconds(), "old-GFLOP/s")
					b.ReportMetric(fl/best[1].Seconds(), "coarse-GFLOP/s")
					b.ReportMetric(fl/best[2].Seconds(), "new-GFLOP/s")
					b.ReportMetric(best[0].Seconds()/best[2].Seconds(), "new/old")
					b.ReportMetric(best[1].Seconds()/best[2].Seconds(), "new/coarse")
				})
			}
		}
		for _, t := range ws {
			DropPackF16(t)
		}
	}
}
