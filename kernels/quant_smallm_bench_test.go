package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkSmallMPrefetch times Pool.MatMul with a few tokens (m = 2, 4, 6, 8: a small decode
// batch, a speculative verification) on Q8_0 and Q4_0 weights streamed from 2 MiB-aligned
// MADV_HUGEPAGE memory (128 MiB of copies, so every call reads from DRAM), the weight prefetch
// of the small-m tiles on and off (prefetchW) alternating call by call, next to the one-token
// decode: each one's median µs per call, on two workers.
//
//	go test ./kernels -run X -bench SmallMPrefetch -benchtime 100x
func BenchmarkSmallMPrefetch(b *testing.B) {
	// As a model's weights (registered at load: PrepackQ8), so that Q4_0 runs its 16-row packs.
	packAllQ8 = true
	defer func() { packAllQ8 = false; q8Packs.Clear() }()
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0} {
		for _, sh := range [][2]int{{32000, 768}, {2048, 768}, {5632, 2048}} {
			n, k := sh[0], sh[1]
			w0 := randQuantFast(b, dt, n, k)
			ws, release := hugeCopies(b, w0, 4, 128<<20)
			copies := len(ws)
			x := qRandVec(rand.New(rand.NewPCG(2, 3)), 8*k, 1)
			out := make([]float32, 8*n)
			p := NewPool(2)
			b.Run(fmt.Sprintf("%s/%dx%d", dt, n, k), func(b *testing.B) {
				defer func(v bool) { prefetchW = v }(prefetchW)
				type run struct {
					m  int
					pf bool
				}
				runs := []run{{1, true}, {2, false}, {2, true}, {4, false}, {4, true}, {6, false}, {6, true}, {8, false}, {8, true}}
				secs := make([][]float64, len(runs))
				i := 0
				for b.Loop() {
					for ri, r := range runs {
						prefetchW = r.pf
						t0 := time.Now()
						if err := p.MatMul(out[:r.m*n], x[:r.m*k], ws[i%copies], r.m); err != nil {
							b.Fatal(err)
						}
						secs[ri] = append(secs[ri], time.Since(t0).Seconds())
						i++
					}
				}
				for ri, r := range runs {
					name := fmt.Sprintf("m%d-us", r.m)
					if r.m > 1 && !r.pf {
						name = fmt.Sprintf("m%d-nopf-us", r.m)
					}
					b.ReportMetric(median(secs[ri])*1e6, name)
				}
			})
			_ = release()
		}
	}
}
