// BenchmarkKRowsCPU compares the AVX2 K-quant decode kernels: the one-row dots (dotQ4K,
// dotQ6K, row after row) against the four-row folded kernels (rows4K, four streams a quarter
// of the rows apart), alternated in one process on a thread locked goroutine, in GB of weights
// per second of the thread's CPU time (a loaded host disturbs it far less than wall time).
// dram: 2048x5632 weights streamed from 256 MiB of huge-page memory; l1: 8 rows of 2048 values
// called 200 times per round.
//
//	go test ./kernels -run X -bench KRowsCPU -benchtime 200x
package kernels

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/mmap"
	"github.com/llmcloud/llmcloud/tensor"
)

func BenchmarkKRowsCPU(b *testing.B) {
	if !useRowsK() {
		b.Skip("no AVX2 four-row K-quant kernels")
	}
	for _, dt := range []tensor.DType{tensor.Q4_K, tensor.Q6_K} {
		for _, c := range []struct {
			name         string
			n, k, calls  int
			copiesTarget int
		}{{"dram", 2048, 5632, 1, 256 << 20}, {"l1", 8, 2048, 200, 0}} {
			b.Run(dt.String()+"/"+c.name, func(b *testing.B) {
				n, k, nb := c.n, c.k, c.k/256
				q6 := dt == tensor.Q6_K
				w0 := randQuantFast(b, dt, n, k)
				size, rs := len(w0.Data), len(w0.Data)/n
				copies := max(2, c.copiesTarget/size&^1)
				mem, release, err := mmap.AnonHuge(copies * size)
				if err != nil {
					b.Fatal(err)
				}
				defer release()
				for i := 0; i < copies; i++ {
					copy(mem[i*size:], w0.Data)
				}
				a := getQ8KActs(1, k)
				a.quantize(Serial, qRandVec(rand.New(rand.NewPCG(2, 3)), k, 1))
				out := make([]float32, n)
				ps := new(streamPtrs)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var cpu1, cpu4, wall1, wall4, ratio []float64
				run := func(r4 bool, w []byte) (cpu, wall float64) {
					c0, t0 := threadCPU(), time.Now()
					for range c.calls {
						switch {
						case r4:
							q := n / 4
							for j := 0; j < 4; j++ {
								ps.ws[j], ps.outs[j] = &w[j*q*rs], &out[j*q]
							}
							callRowsK(ps, q6, a, rs, q, nb, 4)
						case q6:
							for r := 0; r < n; r++ {
								out[r] = dotQ6K(&w[r*rs], &a.qs[0], &a.d[0], &a.bsums[0], nb)
							}
						default:
							for r := 0; r < n; r++ {
								out[r] = dotQ4K(&w[r*rs], &a.qs[0], &a.d[0], &a.bsum8[0], nb)
							}
						}
					}
					return threadCPU() - c0, time.Since(t0).Seconds()
				}
				i := 0
				for b.Loop() {
					c1, w1 := run(false, mem[(2*i)%copies*size:])
					c4, w4 := run(true, mem[(2*i+1)%copies*size:])
					cpu1, wall1, cpu4, wall4 = append(cpu1, c1), append(wall1, w1), append(cpu4, c4), append(wall4, w4)
					ratio = append(ratio, c1/c4)
					i++
				}
				gb := float64(size*c.calls) / 1e9
				b.ReportMetric(gb/median(cpu1), "dot1-GB/cpu-s")
				b.ReportMetric(gb/median(cpu4), "rows4-GB/cpu-s")
				b.ReportMetric(median(ratio), "rows4/dot1-cpu")
				b.ReportMetric(gb/median(wall1), "dot1-GB/s")
				b.ReportMetric(gb/median(wall4), "rows4-GB/s")
			})
		}
	}
}
