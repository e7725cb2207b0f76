package exec_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// BenchmarkMoE runs moe layers of the Qwen2-MoE-shaped perf model (docs/performance.md,
// "Mixture of experts": D 1024, 16 experts of 768, 2 per row, a gated shared expert of 2048)
// on one row (decode) and on 64 rows (a batched decode step). Eight layers of their own
// weights (400 MB in Q8_0), run in turn, keep the weights out of the caches as a model's are;
// besides the mean, min-µs/layer is the fastest pass over the eight divided by eight, the
// figure least moved by other jobs on a shared host, and cpu-µs/layer the process's CPU time
// (user and system, all threads) per layer, which waiting for the CPU does not add to.
//
//	go test ./graph/exec -run X -bench MoE -benchtime 50x
func BenchmarkMoE(b *testing.B) {
	const layers = 8
	c := moeCase{V: 64, D: 1024, F: 768, E: 16, K: 2, Fs: 2048, gated: true, attrs: graph.Attrs{"norm": graph.Int(0)}}
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_K} {
		t := &testing.T{}
		var ps []*exec.Program
		for l := 0; l < layers; l++ {
			ws := moeWeights(t, c, dt, uint64(3+l))
			for _, w := range ws { // the prefill packs the loader makes (model/experts_pack.go)
				if len(w.Shape) == 2 {
					kernels.PrepackQ8(w)
					continue
				}
				for e := 0; e < w.Shape[0]; e++ {
					if s, err := w.Slice(e); err == nil {
						kernels.PrepackQ8(s)
					}
				}
			}
			p, err := exec.Compile(moeGraph(t, c, dt), ws, exec.Options{})
			if err != nil {
				b.Fatal(err)
			}
			ps = append(ps, p)
		}
		for _, n := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/rows=%d", dt, n), func(b *testing.B) {
				best, i := time.Duration(1<<62), 0
				cpu0 := cpuTime()
				for b.Loop() {
					toks := make([]int, n)
					for j := range toks {
						toks[j] = (i*5 + j*7 + 3) % c.V
					}
					st := moeStep(toks)
					t0 := time.Now()
					for _, p := range ps {
						if _, err := p.Run(st); err != nil {
							b.Fatal(err)
						}
					}
					best = min(best, time.Since(t0))
					i++
				}
				b.ReportMetric(float64(best.Microseconds())/layers, "min-µs/layer")
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*layers), "cpu-µs/layer")
			})
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
