package perf_test

import (
	"math"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/perf"
)

// TestLatencyProbes: with a probe, the timed tg runs call it before their first step, after
// every ProbeEvery steps and after their last; the windows chain the probes' values; and the
// probes' time is in neither the steps nor tokens/s.
func TestLatencyProbes(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(p, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const pause = 100 * time.Millisecond
	calls := 0
	res, err := perf.Latency(b.Model, perf.LatencyOptions{Gen: 10, Repetitions: 2, ProbeEvery: 4, Probe: func() float64 {
		calls++
		time.Sleep(pause)
		return float64(calls)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 8 || len(res.TGProbes) != 8 || res.TGProbes[7] != 8 { // per timed run: before, after steps 4 and 8, after step 10
		t.Errorf("%d probes, results %v, want 8: 1..8", calls, res.TGProbes)
	}
	if len(res.TGWindows) != 6 {
		t.Fatalf("%d windows, want 6: %+v", len(res.TGWindows), res.TGWindows)
	}
	for i, w := range res.TGWindows {
		if want := []int{4, 4, 2}[i%3]; w.Steps != want {
			t.Errorf("window %d: %d steps, want %d", i, w.Steps, want)
		}
		if w.After != w.Before+1 {
			t.Errorf("window %d between probes %v and %v, want consecutive probes", i, w.Before, w.After)
		}
		if w.Time <= 0 || w.Time >= pause {
			t.Errorf("window %d: time %v (the probes' %v each must not count)", i, w.Time, pause)
		}
	}
	for _, s := range res.TGSteps {
		if s >= pause {
			t.Errorf("a step of %v: the probe's time counted", s)
		}
	}
	for _, tg := range res.TG {
		if tg < 10/pause.Seconds() { // 10 tokens in under one probe's time
			t.Errorf("tg %.1f t/s: the probes' time counted", tg)
		}
	}
}

func TestPairedShare(t *testing.T) {
	ws := []perf.ProbeWindow{
		{Steps: 2, Time: time.Second, Before: 10, After: 30}, // 20 B/s against 20: 1
		{Steps: 1, Time: time.Second, Before: 30, After: 10}, // 10 against 20: 0.5
		{Steps: 3, Time: time.Second, Before: 10, After: 10}, // 30 against 10: 3
	}
	med, all := perf.PairedShare(ws, 10)
	if med != 1 {
		t.Errorf("median share %v, want 1", med)
	}
	// 60 bytes in 3 s, against probes of 20, 20, 10 for 1 s each: 60 / (20+20+10).
	if want := 1.2; math.Abs(all-want) > 1e-12 {
		t.Errorf("overall share %v, want %v", all, want)
	}
	if m, a := perf.PairedShare(nil, 10); m != 0 || a != 0 {
		t.Errorf("no windows: %v %v, want 0 0", m, a)
	}
}
