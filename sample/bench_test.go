// BenchmarkSample: one draw per op at the vocabulary sizes of Llama 2 (32k) and Qwen (151k),
// for the common parameter sets, with and without a sparse mask, by the fast paths ("fast")
// and by the reference implementation ("ref") in the same run for a fair ratio.
package sample

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
)

// cpuNanos is the process's user+system CPU time: on a shared machine it is steadier than the
// wall time benchmarks report.
func cpuNanos() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}

func BenchmarkSample(b *testing.B) {
	cases := []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"t1", Params{Temperature: 1, TopP: 1}},
		{"t1-topp0.95", Params{Temperature: 1, TopP: 0.95}},
		{"t0.8-topk40", Params{Temperature: 0.8, TopK: 40}},
	}
	for _, n := range []int{32000, 151646} {
		r := rand.New(rand.NewPCG(1, 2))
		logits := randLogits(r, n)
		sparse := make([]uint64, (n+63)/64)
		for range n / 100 {
			setBit(sparse, r.IntN(n))
		}
		for _, c := range cases {
			for _, m := range []struct {
				name string
				mask []uint64
			}{{"nomask", nil}, {"mask1%", sparse}} {
				for _, impl := range []string{"fast", "ref"} {
					b.Run(fmt.Sprintf("V=%d/%s/%s/%s", n, c.name, m.name, impl), func(b *testing.B) {
						s := mustNew(b, c.p)
						if impl == "ref" {
							s.refDraw = (*Sampler).drawReference
							s.refLogprobs = logprobsReference
						}
						cpu := cpuNanos()
						for b.Loop() {
							if _, err := s.SampleMasked(logits, m.mask); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
					})
				}
			}
		}
	}
}
