package sim

import (
	"slices"
	"testing"
	"time"
)

// TestOverheads: measured per-request overheads. One value is the constant RequestOverhead
// plus the TPOT part on every gap; several are drawn per request, the same for the same seed;
// negative ones never make a time negative; bad options are refused.
func TestOverheads(t *testing.T) {
	p := testProfile()
	p.Threads = 1
	p.SetCoefficients(Coefficients{0.01, 0, 0, 0, 0}) // every step 10 ms
	ms := int64(time.Millisecond)
	var reqs []Request
	for i := range 40 {
		reqs = append(reqs, Request{At: int64(i) * 100 * ms, PromptLen: 8, Output: 5, Group: -1})
	}
	run := func(o Options) *Outcome {
		t.Helper()
		o.Profile, o.Replicas = p, 2
		out, err := Simulate(o, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	base := run(Options{Detailed: true})
	one := run(Options{Overheads: []Overhead{{TTFT: 7 * time.Millisecond, TPOT: time.Millisecond}}})
	for i := range reqs {
		if one.TTFT[i] != base.TTFT[i]+7*ms || one.E2E[i] != base.E2E[i]+7*ms+4*ms {
			t.Fatalf("request %d: TTFT %d E2E %d, want %d and %d", i, one.TTFT[i], one.E2E[i], base.TTFT[i]+7*ms, base.E2E[i]+11*ms)
		}
	}
	if one.ITLs != nil {
		t.Error("ITLs kept without Detailed")
	}
	if n := one.ITLHist[11*ms]; n != 4*int64(len(reqs)) {
		t.Errorf("gap histogram: %d gaps of 11 ms, want %d (%v)", n, 4*len(reqs), one.ITLHist)
	}
	if one.End != base.End+11*ms {
		t.Errorf("End %d, want %d", one.End, base.End+11*ms)
	}

	ovs := []Overhead{{TTFT: -50 * time.Millisecond, TPOT: -20 * time.Millisecond}, {TTFT: 30 * time.Millisecond}, {}}
	a := run(Options{Overheads: ovs, OverheadSeed: 1})
	b := run(Options{Overheads: ovs, OverheadSeed: 1})
	c := run(Options{Overheads: ovs, OverheadSeed: 2})
	if !slices.Equal(a.TTFT, b.TTFT) || !slices.Equal(a.E2E, b.E2E) {
		t.Error("the same seed drew different overheads")
	}
	if slices.Equal(a.TTFT, c.TTFT) {
		t.Error("seeds 1 and 2 drew the same overheads for 40 requests")
	}
	seen := map[int64]bool{}
	for i := range reqs {
		d := a.TTFT[i] - base.TTFT[i]
		seen[d] = true
		if a.TTFT[i] < 0 || a.E2E[i] < a.TTFT[i] {
			t.Fatalf("request %d: TTFT %d, E2E %d", i, a.TTFT[i], a.E2E[i])
		}
		if d == -base.TTFT[i] && a.E2E[i] != 0 {
			t.Errorf("request %d: gaps of 10 ms - 20 ms not kept at 0: E2E %d", i, a.E2E[i])
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct TTFT shifts over 40 requests, want 3 (%v)", len(seen), seen)
	}

	for _, o := range []Options{
		{Overheads: ovs, RequestOverhead: time.Millisecond},
		{Overheads: []Overhead{{TTFT: 2 * time.Hour}}},
	} {
		o.Profile, o.Replicas = p, 1
		if _, err := Simulate(o, reqs); err == nil {
			t.Errorf("%+v: no error", o.Overheads)
		}
	}
}

func TestParseOverheads(t *testing.T) {
	ovs, err := ParseOverheads("# ttft tpot\n4.2ms 0.03ms\n\n  -1ms 0s  \n")
	if err != nil || len(ovs) != 2 || ovs[0] != (Overhead{4200 * time.Microsecond, 30 * time.Microsecond}) || ovs[1].TTFT != -time.Millisecond {
		t.Fatalf("got %v, %v", ovs, err)
	}
	for _, bad := range []string{"", "# only\n", "4ms\n", "4ms 1ms 2ms\n", "4 1ms\n", "2h 0s\n"} {
		if _, err := ParseOverheads(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseOverheads(f *testing.F) {
	f.Add("4.2ms 0.03ms\n-1ms 0s\n")
	f.Fuzz(func(t *testing.T, s string) {
		ovs, err := ParseOverheads(s)
		if err == nil && len(ovs) == 0 {
			t.Fatal("no overheads and no error")
		}
	})
}
