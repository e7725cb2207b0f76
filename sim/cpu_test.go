package sim

import (
	"fmt"
	"testing"
	"time"
)

// TestCPUSharing checks the processor-sharing model against a case computed by hand: every
// step costs 100 ms of one thread (a constant-only profile), three one-thread replicas
// (round-robin) on 2 CPUs. Requests 0 and 1 arrive at 0 on replicas 0 and 1; request 2 at
// 50 ms on replica 2; request 3 at 60 ms on replica 0, behind request 0 (two tokens).
//
//	0-50 ms     replicas 0, 1 step at full speed (2 threads on 2 CPUs): 50 ms of work each
//	50-125 ms   replicas 0, 1, 2 step at 2/3: 0 and 1 finish their last 50 ms at 125 ms,
//	            replica 2 has done 50 ms
//	125 ms      replica 0 starts its second step (request 0's decode, request 3's prefill)
//	125-175 ms  replicas 0, 2 at full speed: replica 2 ends at 175 ms
//	175-225 ms  replica 0 alone ends at 225 ms
//
// TTFT: 125, 125, 125 (175-50), 165 (225-60) ms; request 0's E2EL 225 ms. Without sharing
// (CPUs 0, or 3 CPUs or more): 100, 100, 100, 140 ms and 200 ms. With 10 ms added to every
// step and 5 ms to every request, unshared: 115, 115, 115, 165 and 225 ms.
func TestCPUSharing(t *testing.T) {
	p := testProfile()
	p.Threads = 1
	p.SetCoefficients(Coefficients{0.1, 0, 0, 0, 0})
	ms := int64(time.Millisecond)
	reqs := []Request{
		{At: 0, PromptLen: 8, Output: 2, Group: -1},
		{At: 0, PromptLen: 8, Output: 1, Group: -1},
		{At: 50 * ms, PromptLen: 8, Output: 1, Group: -1},
		{At: 60 * ms, PromptLen: 8, Output: 1, Group: -1},
	}
	for _, c := range []struct {
		name          string
		cpus          float64
		step, request time.Duration
		ttft          []float64
		e2e0          float64
	}{
		{name: "2 CPUs", cpus: 2, ttft: []float64{125, 125, 125, 165}, e2e0: 225},
		{name: "1.5 CPUs", cpus: 1.5, ttft: []float64{
			// 0-50: two at 3/4 (37.5 ms of work); 50-?: three at 1/2: 0 and 1 need 62.5 ms
			// more: end at 175; replica 2 has done 62.5 ms; then 2 busy at 3/4: replica 2's
			// last 37.5 ms ends at 225 (TTFT 175), replica 0's second step has done 37.5 ms
			// by then, alone at full speed it ends at 225+62.5 = 287.5 (request 3: 227.5).
			175, 175, 175, 227.5}, e2e0: 287.5},
		{name: "unshared", cpus: 0, ttft: []float64{100, 100, 100, 140}, e2e0: 200},
		{name: "plenty", cpus: 3, ttft: []float64{100, 100, 100, 140}, e2e0: 200},
		{name: "overheads", step: 10 * time.Millisecond, request: 5 * time.Millisecond, ttft: []float64{115, 115, 115, 165}, e2e0: 225},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Simulate(Options{Profile: p, Replicas: 3, CPUs: c.cpus, StepOverhead: c.step, RequestOverhead: c.request}, reqs)
			if err != nil {
				t.Fatal(err)
			}
			near := func(what string, got int64, wantMS float64) {
				t.Helper()
				if d := float64(got) - wantMS*float64(ms); d < -2 || d > 2 {
					t.Errorf("%s = %.6f ms, want %g ms", what, float64(got)/float64(ms), wantMS)
				}
			}
			for i, want := range c.ttft {
				near(fmt.Sprintf("TTFT of request %d", i), out.TTFT[i], want)
			}
			near("E2EL of request 0", out.E2E[0], c.e2e0)
		})
	}
}
