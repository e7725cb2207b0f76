package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadRun on a real run: empty before it starts, every record with the config and done at the
// end, a half-written last line skipped, a run stopped early not done, a bad line named.
func TestReadRun(t *testing.T) {
	dataDir := prepare(t, kibText+"\n\n"+kibText[:500], kibText[100:800])
	c := tinyConfig(dataDir, filepath.Join(t.TempDir(), "run"))
	c.Steps, c.EvalEvery, c.LogEvery = 6, 3, 3
	if err := CheckRunDir(c.Out); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing directory: %v", err)
	}
	v, err := ReadRun(c.Out)
	if err != nil || len(v.Records) != 0 || v.Config != nil || v.Done {
		t.Fatalf("before the run: %+v %v", v, err)
	}
	var during []RunView
	tr := newTrainer(t, c)
	if _, err := tr.Run(context.Background(), RunOptions{PeakFLOPS: 1e9, OnStep: func(s StepStats) {
		v, err := ReadRun(c.Out)
		if err != nil {
			t.Errorf("step %d: %v", s.Step, err)
		}
		during = append(during, v)
	}}); err != nil {
		t.Fatal(err)
	}
	if len(during) != 6 || len(during[2].Records) != 2 || during[5].Done {
		t.Errorf("reads during the run: %d, records at step 3: %d, done at 6: %v", len(during), len(during[2].Records), during[5].Done)
	}
	if err := CheckRunDir(c.Out); err != nil {
		t.Fatal(err)
	}
	v, err = ReadRun(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	steps, vals := 0, 0
	for _, r := range v.Records {
		if r.Loss != nil {
			steps++
		}
		if r.ValLoss != nil {
			vals++
		}
	}
	if steps != 6 || vals != 2 || !v.Done || v.Config == nil || v.Config.Steps != 6 || v.Dir != c.Out {
		t.Fatalf("finished run: %d steps, %d validations, done %v, config %+v", steps, vals, v.Done, v.Config)
	}

	// The trainer between its writes: a last line without its newline is not read yet.
	logPath := filepath.Join(c.Out, logFile)
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"step":7,"loss":3.1,"l`)
	f.Close()
	half, err := ReadRun(c.Out)
	if err != nil || len(half.Records) != len(v.Records) {
		t.Fatalf("half-written line: %d records, %v; want %d", len(half.Records), err, len(v.Records))
	}
	if half.Done {
		t.Error("a log written after the final checkpoint still reads as done")
	}
	os.WriteFile(logPath, []byte(`{"step":1,"loss":2}`+"\nnot json\n"), 0o644)
	if _, err := ReadRun(c.Out); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad complete line: %v, want an error naming line 2", err)
	}

	// A run stopped early is not done.
	c2 := c
	c2.Out = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	newTrainer(t, c2).Run(ctx, RunOptions{PeakFLOPS: 1e9, OnStep: func(s StepStats) {
		if s.Step == 2 {
			cancel()
		}
	}})
	if v, err := ReadRun(c2.Out); err != nil || v.Done || v.Config == nil || len(v.Records) != 2 {
		t.Errorf("stopped run: done %v, %d records, %v", v.Done, len(v.Records), err)
	}
	if err := CheckRunDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("empty directory: %v", err)
	}
}
