package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --resume auto starts fresh in an empty run directory and resumes once a checkpoint exists;
// --resume latest insists on one.
func TestResolveAuto(t *testing.T) {
	run := t.TempDir()
	if dir, err := ResolveCheckpoint("auto", run); err != nil || dir != "" {
		t.Fatalf("auto in an empty run: %q, %v", dir, err)
	}
	if _, err := ResolveCheckpoint("latest", run); err == nil {
		t.Fatal("latest in an empty run: no error")
	}
	if _, err := ResolveCheckpoint("auto", ""); err == nil {
		t.Fatal("auto without --out: no error")
	}
	tr := newTrainer(t, tinyConfig(prepare(t, kibText, ""), run))
	saved, err := tr.Save()
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"auto", "latest"} {
		if dir, err := ResolveCheckpoint(arg, run); err != nil || dir != saved {
			t.Errorf("%s: %q, %v; want %q", arg, dir, err, saved)
		}
	}
	st, err := ReadState(saved)
	if err != nil || st.Step != 0 || st.Model != tr.Model {
		t.Fatalf("ReadState: %+v, %v", st, err)
	}
	// A damaged trainer.json is an error naming the checkpoint, not a panic.
	os.WriteFile(filepath.Join(saved, stateFile), []byte(`{"version": 1, "model": {"Dim": -3}}`), 0o644)
	if _, err := ReadState(saved); err == nil || !strings.Contains(err.Error(), saved) {
		t.Errorf("damaged state: %v", err)
	}
}

// ResumeConfig keeps what the run computes and resets how it runs, so another grid can resume.
func TestResumeConfigResetsTheLayout(t *testing.T) {
	c := tinyConfig("data", "run")
	c.DP, c.TP, c.PP, c.ZeroStage, c.MicroBatches, c.TimeoutSec, c.Threads = 2, 2, 2, 3, 4, 5, 7
	c.PPSchedule, c.BucketMB = "naive", 1
	got := ResumeConfig(&State{Config: c})
	d := DefaultConfig()
	if got.DP != d.DP || got.TP != d.TP || got.PP != d.PP || got.ZeroStage != d.ZeroStage ||
		got.MicroBatches != d.MicroBatches || got.TimeoutSec != d.TimeoutSec || got.Threads != d.Threads ||
		got.PPSchedule != d.PPSchedule || got.BucketMB != d.BucketMB {
		t.Errorf("layout kept: %+v", got)
	}
	got.DP, got.TP, got.PP, got.ZeroStage, got.MicroBatches, got.TimeoutSec, got.Threads = c.DP, c.TP, c.PP, c.ZeroStage, c.MicroBatches, c.TimeoutSec, c.Threads
	got.PPSchedule, got.BucketMB = c.PPSchedule, c.BucketMB
	if got != c {
		t.Errorf("the run's settings changed:\n%+v\n%+v", got, c)
	}
}
