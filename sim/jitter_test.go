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
	p := tenMsProfile()
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

// tenMsProfile is a one-thread profile whose every step takes 10 ms.
func tenMsProfile() *Profile {
	p := testProfile()
	p.Threads = 1
	p.SetCoefficients(Coefficients{0.01, 0, 0, 0, 0})
	return p
}

func TestParseOverheads(t *testing.T) {
	ovs, err := ParseOverheads("# ttft tpot\n4.2ms 0.03ms\n\n  -1ms 0s  \n")
	if err != nil || len(ovs) != 2 || ovs[0] != (Overhead{TTFT: 4200 * time.Microsecond, TPOT: 30 * time.Microsecond}) || ovs[1].TTFT != -time.Millisecond {
		t.Fatalf("got %v, %v", ovs, err)
	}
	ovs, err = ParseOverheads("4ms 1ms 0\n-2ms 0s 256\n")
	if err != nil || len(ovs) != 2 || ovs[0].Cache != CacheMiss || ovs[1] != (Overhead{TTFT: -2 * time.Millisecond, Cache: CacheHit}) {
		t.Fatalf("with cached tokens: got %v, %v", ovs, err)
	}
	for _, bad := range []string{"", "# only\n", "4ms\n", "4ms 1ms 2ms\n", "4 1ms\n", "2h 0s\n",
		"4ms 1ms -1\n", "4ms 1ms 3 4\n", "4ms 1ms 16\n4ms 1ms\n"} {
		if _, err := ParseOverheads(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestOverheadsByCacheOutcome: overheads that say whether their request hit the prefix cache
// are drawn by the simulated request's own outcome, in the open loop and the closed one; a
// class with no measured request falls back to all of them.
func TestOverheadsByCacheOutcome(t *testing.T) {
	p := tenMsProfile()
	ms := int64(time.Millisecond)
	var reqs []Request
	for i := range 30 { // one group: on one replica the first misses, the rest hit 64 tokens
		reqs = append(reqs, Request{At: int64(i) * 100 * ms, PromptLen: 80, Output: 3, Group: 0, PrefixLen: 64})
	}
	run := func(o Options) *Outcome {
		t.Helper()
		o.Profile, o.Replicas, o.OverheadSeed = p, 1, 3
		out, err := Simulate(o, reqs)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	base := run(Options{})
	for i, c := range base.Cached {
		if want := int32(min(i, 1) * 64); c != want {
			t.Fatalf("request %d: %d cached prompt tokens, want %d", i, c, want)
		}
	}
	ovs := []Overhead{{TTFT: 30 * time.Millisecond, Cache: CacheMiss}, {TTFT: time.Millisecond, Cache: CacheHit},
		{TTFT: 2 * time.Millisecond, Cache: CacheHit}}
	for _, mc := range []int{0, 1} {
		got := run(Options{Overheads: ovs, MaxConcurrency: mc})
		seen := map[int64]bool{}
		for i := range reqs {
			d := got.TTFT[i] - base.TTFT[i]
			if i == 0 && d != 30*ms || i > 0 && d != ms && d != 2*ms {
				t.Fatalf("max concurrency %d: request %d (cached %d) drew %v", mc, i, got.Cached[i], time.Duration(d))
			}
			seen[d] = true
		}
		if len(seen) != 3 {
			t.Errorf("max concurrency %d: the hits drew one value: %v", mc, seen)
		}
	}
	// Only hits measured: the miss draws from them.
	got := run(Options{Overheads: ovs[1:]})
	if d := got.TTFT[0] - base.TTFT[0]; d != ms && d != 2*ms {
		t.Errorf("a miss with no measured misses drew %v", time.Duration(d))
	}
	mixed := []Overhead{{TTFT: time.Millisecond, Cache: CacheHit}, {TTFT: time.Millisecond}}
	if _, err := Simulate(Options{Profile: p, Replicas: 1, Overheads: mixed}, reqs); err == nil {
		t.Error("overheads with and without a cache outcome: no error")
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
