package sim

import (
	"strings"
	"testing"
	"time"
)

// TestMaxConcurrency: with bench serve's --max-concurrency N, requests that arrive together are
// sent N at a time, each when one before it ends as the client sees it (overhead included),
// and count their TTFT and E2E from their send; a refused request gives its slot back at once.
func TestMaxConcurrency(t *testing.T) {
	p := testProfile()
	p.Threads = 1
	p.SetCoefficients(Coefficients{0.01, 0, 0, 0, 0}) // every step 10 ms
	ms := int64(time.Millisecond)
	reqs := make([]Request, 12)
	for i := range reqs {
		reqs[i] = Request{At: 0, PromptLen: 8, Output: 5, Group: -1} // all at once (rate inf)
	}
	run := func(o Options, rs []Request) *Outcome {
		t.Helper()
		o.Profile, o.Replicas = p, 3
		out, err := Simulate(o, rs)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// One at a time: 5 steps of 10 ms, plus 3 ms outside the engine, one after another.
	one := run(Options{MaxConcurrency: 1, RequestOverhead: 3 * time.Millisecond}, reqs)
	for i := range reqs {
		if one.Requests[i].At != int64(i)*53*ms || one.TTFT[i] != 13*ms || one.E2E[i] != 53*ms {
			t.Fatalf("request %d: sent at %d, TTFT %d, E2E %d; want %d, %d, %d", i, one.Requests[i].At, one.TTFT[i], one.E2E[i], int64(i)*53*ms, 13*ms, 53*ms)
		}
	}
	if one.PeakConc != 1 || one.End != 12*53*ms {
		t.Errorf("peak concurrency %d, end %d; want 1 and %d", one.PeakConc, one.End, 12*53*ms)
	}
	if reqs[5].At != 0 {
		t.Error("the caller's requests were changed")
	}

	// Two at a time on three replicas: never more than two in flight, nobody waits for a step.
	two := run(Options{MaxConcurrency: 2}, reqs)
	open := run(Options{}, reqs)
	if two.PeakConc != 2 || open.PeakConc != len(reqs) {
		t.Errorf("peak concurrency %d capped at 2, %d uncapped (want %d)", two.PeakConc, open.PeakConc, len(reqs))
	}
	for i := range reqs {
		if two.TTFT[i] != 10*ms || two.Requests[i].At != int64(i/2)*50*ms {
			t.Fatalf("request %d (cap 2): sent at %d, TTFT %d", i, two.Requests[i].At, two.TTFT[i])
		}
	}

	// Measured overheads: a slot frees when the client has the last token, with the request's
	// drawn overhead, so each send is the one before's send plus its reported E2E.
	ovs := []Overhead{{TTFT: 4 * time.Millisecond, TPOT: time.Millisecond}, {TTFT: -2 * time.Millisecond, TPOT: 3 * time.Millisecond}, {TTFT: 20 * time.Millisecond}}
	m := run(Options{MaxConcurrency: 1, Overheads: ovs, OverheadSeed: 7}, reqs)
	shifts := map[int64]bool{}
	for i := 1; i < len(reqs); i++ {
		if m.Requests[i].At != m.Requests[i-1].At+m.E2E[i-1] {
			t.Fatalf("request %d sent at %d, want %d + E2E %d", i, m.Requests[i].At, m.Requests[i-1].At, m.E2E[i-1])
		}
		shifts[m.E2E[i]-50*ms] = true
	}
	if len(shifts) < 2 {
		t.Errorf("every request drew the same overhead: %v", shifts)
	}

	// A prompt over the model's length is refused at once and holds no slot.
	bad := append([]Request(nil), reqs[:4]...)
	bad[1].PromptLen = 5000
	b := run(Options{MaxConcurrency: 1}, bad)
	if !strings.Contains(b.Errors[1], "max-model-len") || b.Requests[1].At != 50*ms || b.Requests[2].At != 50*ms || b.Requests[3].At != 100*ms {
		t.Errorf("refused request: error %q; sends %d %d %d", b.Errors[1], b.Requests[1].At, b.Requests[2].At, b.Requests[3].At)
	}

	if _, err := Simulate(Options{Profile: p, Replicas: 1, MaxConcurrency: -1}, reqs); err == nil {
		t.Error("max concurrency -1: no error")
	}
}
