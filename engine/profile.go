// This file is the engine's profiling: with a recorder set (SetProfiler), every step is drawn
// as slices on the "engine" process's tracks: "schedule" on the scheduler's track, and "step"
// with its "forward", "mask wait", "sample" and "propose" (speculative decoding) inside on the
// engine's; the forward pass's ops go to the recorder through the model's batch (graph/exec's
// profiling).
package engine

import (
	"time"

	"github.com/llmcloud/llmcloud/profile"
)

// Track names of the engine's slices in a profile.
const (
	ProfileProcess = "engine"
	TrackEngine    = "engine steps"
	TrackScheduler = "scheduler"
)

// SetProfiler starts recording into rec from the next step on; nil stops. The recorder may be
// read (written out) once a later step has begun or the engine is idle.
func (e *Engine) SetProfiler(rec *profile.Recorder) { e.profiler.Store(rec) }

// Profiler is the recorder steps are recorded into (nil: off).
func (e *Engine) Profiler() *profile.Recorder { return e.profiler.Load() }

// recordStep records one step that scheduled from sched0 to sched1 and ended at end.
func recordStep(rec *profile.Recorder, plan *StepPlan, sched0, sched1 time.Time, res stepResult, end time.Time) {
	args := map[string]any{"step": plan.Step, "seqs": len(plan.Seqs), "tokens": plan.NumBatchedTokens}
	rec.Track(ProfileProcess, TrackScheduler).Span("schedule", "engine", sched0, sched1, args)
	tr := rec.Track(ProfileProcess, TrackEngine)
	tr.Span("step", "engine", sched0, end, args)
	if res.start.IsZero() {
		return // nothing ran
	}
	fwdEnd := res.start.Add(res.forward)
	tr.Span("forward", "engine", res.start, fwdEnd, nil)
	sampleStart := fwdEnd.Add(res.maskWait)
	if res.maskWait > 0 {
		tr.Span("mask wait", "engine", fwdEnd, sampleStart, nil)
	}
	tr.Span("sample", "engine", sampleStart, sampleStart.Add(res.sample), nil)
	if res.propose > 0 {
		tr.Span("propose", "engine", res.proposeStart, res.proposeStart.Add(res.propose), nil)
	}
}
