// Tests of the non-finite step guard: a NaN loss injected at step k is skipped and logged
// naming step k; a run of them stops the run with a checkpoint that resumes.
package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNaNStepSkippedAndLogged(t *testing.T) {
	c := tinyConfig(prepare(t, kibText, ""), t.TempDir())
	c.Steps, c.EvalEvery = 6, 0
	tr := newTrainer(t, c)
	tr.injectNaN = func(step int) bool { return step == 3 }
	var skipped []int
	sum, err := tr.Run(context.Background(), RunOptions{PeakFLOPS: 1e9, OnStep: func(s StepStats) {
		if s.Skipped != "" {
			skipped = append(skipped, s.Step)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 6 || len(skipped) != 1 || skipped[0] != 3 {
		t.Fatalf("steps %d, skipped %v", sum.Steps, skipped)
	}
	raw, err := os.ReadFile(filepath.Join(c.Out, logFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) < 6 || !strings.Contains(lines[2], `"step":3`) || !strings.Contains(lines[2], `"skipped":"loss NaN`) ||
		!strings.Contains(lines[2], `"loss=NaN"`) || strings.Contains(lines[3], "skipped") {
		t.Fatalf("log:\n%s", raw)
	}
	if _, err := LoadCheckpoint(sum.Checkpoint); err != nil {
		t.Fatal(err)
	}
}

func TestNaNRunStopsWithResumableCheckpoint(t *testing.T) {
	c := tinyConfig(prepare(t, kibText, ""), t.TempDir())
	c.Steps, c.EvalEvery, c.MaxBadSteps = 20, 0, 3
	tr := newTrainer(t, c)
	tr.injectNaN = func(step int) bool { return step >= 4 && step <= 12 }
	sum, err := tr.Run(context.Background(), RunOptions{PeakFLOPS: 1e9})
	if err == nil || !strings.Contains(err.Error(), "stopped at step 6") || !strings.Contains(err.Error(), "since step 4") ||
		!strings.Contains(err.Error(), "weights of step 3") {
		t.Fatalf("err %v", err)
	}
	if sum == nil || sum.Checkpoint == "" {
		t.Fatalf("summary %+v", sum)
	}
	dir, err := ResolveCheckpoint("latest", c.Out)
	if err != nil || dir != sum.Checkpoint {
		t.Fatalf("latest %q, %v", dir, err)
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil || ck.State.Step != 6 {
		t.Fatalf("checkpoint: %v", err)
	}
	r := newTrainer(t, c)
	if err := r.Restore(ck); err != nil {
		t.Fatal(err)
	}
	s, err := r.Step()
	if err != nil || s.Step != 7 || s.Skipped != "" {
		t.Fatalf("resumed step %+v, %v", s, err)
	}
}
