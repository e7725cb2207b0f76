package main

import (
	"strings"
	"testing"
	"time"
)

// A NaN loss injected at step 5 of a 2-rank ZeRO-1 run: every rank skips the same step (the
// loss is averaged over the ranks before the check), the run finishes, and the log names step 5.
func TestTrainNprocNaNStepSkipped(t *testing.T) {
	t.Setenv("LLMCLOUD_TRAIN_INJECT_NAN", "5")
	out := t.TempDir()
	args := distArgs(distData(t), out, "--nproc", "2", "--zero-stage", "1")
	for i, a := range args {
		if a == "--steps" {
			args[i+1] = "8"
		}
	}
	l := startLaunch(t, args...)
	l.wait(t, 2*time.Minute)
	if l.err != nil {
		t.Fatalf("run: %v\n%s", l.err, l.output())
	}
	if !strings.Contains(l.output(), "step 5 skipped: loss NaN") || !strings.Contains(l.output(), "trained 8 steps") {
		t.Errorf("output:\n%s", l.output())
	}
	losses := stepLosses(t, out)
	if _, ok := losses[5]; ok || len(losses) != 7 {
		t.Errorf("logged losses %v, want 7 steps without step 5", losses)
	}
}
