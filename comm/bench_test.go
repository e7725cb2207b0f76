// Benchmarks of allreduce between two ranks in this process (two groups over real TCP
// connections or /dev/shm rings; each rank on its own goroutine), for profiling and for
// comparing algorithms: go test ./comm -run '^$' -bench AllReduce -benchtime 20x. Each
// benchmark reports the bus bandwidth (busbw GB/s, nccl-tests' definition: 2(n-1)/n x size /
// time) the median time of one call (p50-us) and the CPU time both ranks spent per call (cpu-us/op).
package comm

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cpuTime is this process's user plus system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkAllReduce(b *testing.B) {
	for _, tr := range []Transport{SHM, TCP} {
		for _, size := range []int{512, 4 << 10, 1 << 20, 64 << 20} {
			b.Run(fmt.Sprintf("%s/%dB", tr, size), func(b *testing.B) {
				opts := DefaultOptions()
				opts.Transport, opts.SetupTimeout = tr, 30*time.Second
				gs := inProcess(b, 2, opts)
				var xs [2][]float32
				for r := range xs {
					xs[r] = make([]float32, size/4)
					for i := range xs[r] {
						xs[r][i] = float32(r + i%7)
					}
				}
				var times [2][]time.Duration
				b.SetBytes(int64(size))
				cpu0 := cpuTime()
				b.ResetTimer()
				var wg sync.WaitGroup
				for r, g := range gs {
					wg.Go(func() {
						for range b.N {
							t0 := time.Now()
							if err := g.AllReduce(xs[r], Sum); err != nil {
								b.Error(err)
								return
							}
							times[r] = append(times[r], time.Since(t0))
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
				all := slices.Concat(times[0], times[1])
				slices.Sort(all)
				if len(all) > 0 {
					b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-us")
				}
				b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "busbw-GB/s")
			})
		}
	}
}
