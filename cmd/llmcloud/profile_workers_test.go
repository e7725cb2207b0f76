// Tests of the worker-use summary on a recorder filled by hand: busy sums per worker, the
// window, and the caller's time outside its parts counted only in ops with parallel parts.
package main

import (
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/profile"
)

func TestWorkerUse(t *testing.T) {
	rec := profile.New()
	c := rec.Track(exec.ProfileProcess, exec.WorkerTrack(0))
	w1 := rec.Track(exec.ProfileProcess, exec.WorkerTrack(1))
	us := time.Microsecond
	add := func(tr *profile.Track, cat string, start, dur time.Duration) {
		tr.Add(profile.Slice{Start: start * us, Dur: dur * us, Name: "op", Cat: cat})
	}
	// A parallel op [0, 100): caller parts 60 µs, worker 1 90 µs: the caller is out 40 µs.
	add(c, "op", 0, 100)
	add(c, "worker", 0, 50)
	add(c, "worker", 60, 10)
	add(w1, "worker", 5, 90)
	// An op on the caller alone [100, 130): not counted as waiting.
	add(c, "op", 100, 30)
	// A part outside the window.
	add(w1, "worker", 500, 10)
	u := measureWorkerUse(rec.Tracks(), 2, 0, 200*us)
	if u.busy[0] != 60*us || u.busy[1] != 90*us {
		t.Errorf("busy %v, want [60µs 90µs]", u.busy)
	}
	if u.callerOut != 40*us {
		t.Errorf("caller outside its parts %v, want 40µs", u.callerOut)
	}
	var b strings.Builder
	u.write(&b, "prefill", 150*us)
	if !strings.Contains(b.String(), "together 50.0% of 2 x the step time") {
		t.Errorf("summary %q", b.String())
	}
}
