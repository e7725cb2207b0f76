package sim

import (
	"testing"
	"time"
)

// TestOverheadsTPOTOnlyAlone: the measured TPOT parts hold the client's view of a lone stream
// (their median), so a request whose life overlaps another's gets its draw less that median
// (one value: the server's gaps; its TTFT part still added), in the open loop and in a closed
// loop of two; a closed loop of one serves every request alone.
func TestOverheadsTPOTOnlyAlone(t *testing.T) {
	p := tenMsProfile()
	ms := int64(time.Millisecond)
	// Each request: a 10 ms prefill step and four 10 ms decode steps (50 ms). 0 and 1
	// overlap (1 arrives 20 ms after 0, on the other replica); 2 and 3 are alone; 4 arrives
	// 10 ms after 3 ends.
	reqs := []Request{
		{At: 0, PromptLen: 8, Output: 5, Group: -1},
		{At: 20 * ms, PromptLen: 8, Output: 5, Group: -1},
		{At: 500 * ms, PromptLen: 8, Output: 5, Group: -1},
		{At: 1000 * ms, PromptLen: 8, Output: 5, Group: -1},
		{At: 1060 * ms, PromptLen: 8, Output: 5, Group: -1},
	}
	ovs := []Overhead{{TTFT: 7 * time.Millisecond, TPOT: time.Millisecond}}
	run := func(conc int, o Options) *Outcome {
		t.Helper()
		o.Profile, o.Replicas, o.MaxConcurrency = p, 2, conc
		out, err := Simulate(o, append([]Request(nil), reqs...))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		conc  int
		alone []bool
	}{
		{0, []bool{false, false, true, true, true}},
		{2, []bool{false, false, true, true, true}},
		{1, []bool{true, true, true, true, true}},
	} {
		base := run(tc.conc, Options{})
		got := run(tc.conc, Options{Overheads: ovs})
		for i, alone := range tc.alone {
			want := base.E2E[i] + 7*ms
			if alone {
				want += 4 * ms
			}
			if got.TTFT[i] != base.TTFT[i]+7*ms || got.E2E[i] != want {
				t.Errorf("max concurrency %d, request %d (alone %v): TTFT %v E2E %v, want %v and %v", tc.conc, i, alone,
					time.Duration(got.TTFT[i]), time.Duration(got.E2E[i]), time.Duration(base.TTFT[i]+7*ms), time.Duration(want))
			}
		}
	}

	// Three TPOT parts, median 3 ms: alone, a request's four gaps grow by 1, 3 or 5 ms each;
	// shared, by -2, 0 or 2 ms.
	three := []Overhead{{TTFT: 7 * time.Millisecond, TPOT: time.Millisecond}, {TTFT: 7 * time.Millisecond, TPOT: 3 * time.Millisecond},
		{TTFT: 7 * time.Millisecond, TPOT: 5 * time.Millisecond}}
	for _, conc := range []int{0, 2} {
		base := run(conc, Options{})
		shared := map[int64]bool{}
		for seed := range uint64(8) {
			got := run(conc, Options{Overheads: three, OverheadSeed: seed})
			for i := range reqs {
				d := (got.E2E[i] - base.E2E[i] - 7*ms) / 4
				ok := d == ms || d == 3*ms || d == 5*ms
				if i < 2 {
					ok = d == -2*ms || d == 0 || d == 2*ms
					shared[d] = true
				}
				if !ok {
					t.Errorf("max concurrency %d, seed %d, request %d: gaps grew by %v", conc, seed, i, time.Duration(d))
				}
			}
		}
		if len(shared) < 2 {
			t.Errorf("max concurrency %d: the shared requests' gaps over 8 seeds all grew by %v: the jitter was not kept", conc, shared)
		}
	}
}
