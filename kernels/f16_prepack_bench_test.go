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

// BenchmarkGemmF16Pack compares the AVX2 F16 GEMM on the stored rows (rows: gemmDirectF16
// for m <= 64, gemmStream above), on packs in the old layout (g4: groups of 4 rows, dot-product
// kernels with a reduction per 512 columns) and on the panel packs of f16_bcast.go (new:
// broadcast kernels), on the weight shapes of stories110M and TinyLlama, weights from DRAM
// (copies filling 96 MiB, used in turn; F16HOT=1: one copy, cache-resident). Each iteration
// runs each variant once, alternating; reported: each one's fastest run in GFLOP/s (with 1
// thread, by the thread's CPU time) and the ratios.
func BenchmarkGemmF16Pack(b *testing.B) {
	if !useFloatAsm || useAVX512 {
		b.Skip("AVX2 family only")
	}
	r := rand.New(rand.NewSource(1))
	pools := map[int]*Pool{1: NewPool(1), 2: NewPool(2)}
	defer func(g bool) { packG4 = g }(packG4)
	for _, s := range gemmF16Shapes {
		n, k := s[0], s[1]
		w, _ := tensor.Convert(f32Tensor("w", []int{n, k}, randVec(r, n*k, 0.1)), tensor.F16)
		ws := []*tensor.Tensor{w}
		for os.Getenv("F16HOT") == "" && len(ws)*len(w.Data) < 96<<20 {
			c := *w
			c.Data = append([]byte(nil), w.Data...)
			ws = append(ws, &c)
		}
		var g4 []*tensor.Tensor // the same data, registered with the old layout
		for _, t := range ws {
			c := *t
			g4 = append(g4, &c)
			packG4 = false
			PrepackF16(t)
			f16PackOf(Default, t) // made now, not in the timed loop
			packG4 = true
			PrepackF16(&c)
			f16PackOf(Default, &c)
		}
		packG4 = false
		for _, m := range []int{16, 64, 512} {
			x := randVec(r, m*k, 1)
			out := make([]float32, m*n)
			for _, th := range []int{1, 2} {
				p := pools[th]
				b.Run(fmt.Sprintf("%dx%d/m=%d/t=%d", n, k, m, th), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					defer func(v bool) { usePacks = v }(usePacks)
					best := [3]time.Duration{1 << 62, 1 << 62, 1 << 62}
					i := 0
					for b.Loop() {
						for v := range best {
							usePacks = v > 0
							i++
							wt := ws[i%len(ws)]
							if v == 1 {
								wt = g4[i%len(ws)]
							}
							t0, c0 := time.Now(), threadCPU()
							p.MatMul(out, x, wt, m)
							d := time.Since(t0)
							if th == 1 {
								d = time.Duration((threadCPU() - c0) * 1e9)
							}
							best[v] = min(best[v], d)
						}
					}
					fl := 2 * float64(m*n*k) / 1e9
					b.ReportMetric(fl/best[0].Seconds(), "rows-GFLOP/s")
					b.ReportMetric(fl/best[1].Seconds(), "g4-GFLOP/s")
					b.ReportMetric(fl/best[2].Seconds(), "new-GFLOP/s")
					b.ReportMetric(best[1].Seconds()/best[2].Seconds(), "new/g4")
				})
			}
		}
		for _, t := range ws {
			DropPackF16(t)
		}
		for _, t := range g4 {
			DropPackF16(t)
		}
	}
}
