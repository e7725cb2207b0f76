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

// BenchmarkGemmF16Pack compares the F16 GEMM on the stored rows (old: on AVX2 gemmDirectF16
// for m <= 64, gemmStream above; on AVX-512 the dot-product tiles of gemmDirect / gemmPacked)
// with the broadcast kernels on packs made by PrepackF16 (coarse: with gemmDirectF16's item
// sizes; new: packItems' smaller items; on AVX-512 also avx2: the AVX2 broadcast kernels with
// packItems' items), on the weight shapes of stories110M and TinyLlama, weights from DRAM
// (copies filling 96 MiB, used in turn; F16HOT=1: one copy, cache-resident). Each iteration
// runs each variant once, alternating; reported: each one's fastest run in GFLOP/s (with 1
// thread, by the thread's CPU time) and the ratios.
func BenchmarkGemmF16Pack(b *testing.B) {
	if !useFloatAsm {
		b.Skip("no AVX2/FMA/F16C")
	}
	hasZ := useAVX512
	defer func() { useAVX512 = hasZ }()
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
					best := [4]time.Duration{1 << 62, 1 << 62, 1 << 62, 1 << 62}
					nv := 3
					if hasZ {
						nv = 4
					}
					i := 0
					for b.Loop() {
						for v := range best[:nv] {
							usePacks, packFineItems, useAVX512 = v > 0, v >= 2, hasZ && v != 3
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
					if hasZ {
						b.ReportMetric(fl/best[3].Seconds(), "avx2-GFLOP/s")
						b.ReportMetric(best[3].Seconds()/best[2].Seconds(), "new/avx2")
					}
				})
			}
		}
		for _, t := range ws {
			DropPackF16(t)
		}
	}
}
