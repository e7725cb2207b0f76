// Tests of mixed precision and loss-spike handling on a tiny model (deterministic): bf16
// training follows fp32's losses closely and repeats itself bit for bit; an injected spike is
// detected, skipped and logged, and the run continues to the loss curve of the run without it.
package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runLosses trains c and returns every step's loss and the final validation loss.
func runLosses(t *testing.T, c Config) ([]float64, []StepStats, float64) {
	t.Helper()
	tr := newTrainer(t, c)
	var losses []float64
	var steps []StepStats
	sum, err := tr.Run(context.Background(), RunOptions{PeakFLOPS: 1e9, OnStep: func(s StepStats) {
		losses = append(losses, float64(s.Loss))
		steps = append(steps, s)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return losses, steps, sum.ValLoss
}

func TestBF16TracksFP32(t *testing.T) {
	dir := prepare(t, strings.Repeat(kibText, 4), kibText)
	c := tinyConfig(dir, "")
	c.Steps, c.EvalEvery = 40, 0
	f32, _, v32 := runLosses(t, c)
	c.Precision = "bf16"
	bf, _, vbf := runLosses(t, c)
	bf2, _, _ := runLosses(t, c)
	for i := range bf {
		if bf[i] != bf2[i] {
			t.Fatalf("bf16 run not deterministic at step %d: %v vs %v", i+1, bf[i], bf2[i])
		}
	}
	if math.Abs(vbf-v32)/v32 > 0.02 || math.Abs(bf[len(bf)-1]-f32[len(f32)-1])/f32[len(f32)-1] > 0.03 {
		t.Fatalf("bf16 val %.4f vs fp32 %.4f; last train loss %.4f vs %.4f", vbf, v32, bf[len(bf)-1], f32[len(f32)-1])
	}
	t.Logf("40 steps: val loss bf16 %.4f, fp32 %.4f; last train loss bf16 %.4f, fp32 %.4f", vbf, v32, bf[len(bf)-1], f32[len(f32)-1])
}

func TestSpikeSkippedAndCurveContinues(t *testing.T) {
	dir := prepare(t, strings.Repeat(kibText, 4), kibText)
	c := tinyConfig(dir, t.TempDir())
	c.Steps, c.EvalEvery, c.SpikeThreshold = 60, 0, 50 // this tiny model has natural spikes of ~15x; the injected one is 1000x
	// No clipping: clipped to norm 1, a uniformly scaled gradient would give the very update
	// of the clean batch; unclipped it fills AdamW's second moment and stalls the next steps.
	c.Clip = 0
	base, _, vBase := runLosses(t, c)

	c.Out, c.InjectSpike = t.TempDir(), 30
	inj, st, vInj := runLosses(t, c)
	for i, s := range st {
		spike := strings.HasPrefix(s.Skipped, "spike: grad_norm")
		if spike != (i+1 == 30) {
			t.Fatalf("step %d skipped %q", i+1, s.Skipped)
		}
	}
	raw, err := os.ReadFile(filepath.Join(c.Out, logFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if !strings.Contains(lines[29], `"step":30`) || !strings.Contains(lines[29], `"spikes":1`) ||
		!strings.Contains(lines[29], "x median") || !strings.Contains(lines[59], `"spikes":1`) {
		t.Fatalf("log lines 30, 60:\n%s\n%s", lines[29], lines[59])
	}
	// The same curve within noise: the skipped step only leaves out one batch's update.
	var worst float64
	for i := 30; i < 60; i++ {
		worst = max(worst, math.Abs(inj[i]-base[i])/base[i])
	}
	t.Logf("steps 31-60: largest relative loss difference %.4f; val loss %.4f (spike skipped) vs %.4f (no spike)", worst, vInj, vBase)
	for i := 35; i < 60; i++ {
		if math.Abs(inj[i]-base[i]) > 0.05*base[i] {
			t.Fatalf("step %d: loss %.4f with the skipped spike, %.4f without it", i+1, inj[i], base[i])
		}
	}
	if math.Abs(vInj-vBase) > 0.02*vBase {
		t.Fatalf("val loss %.4f with the skipped spike, %.4f without", vInj, vBase)
	}

	// Without the guard the spike is taken (no skip).
	c.Out, c.SpikeThreshold = t.TempDir(), 0
	unguarded, st, vUn := runLosses(t, c)
	t.Logf("unguarded: step 30 norm %.4g taken; loss at step 60 %.4f (guarded %.4f, no spike %.4f); val loss %.4f",
		st[29].GradNorm, unguarded[59], inj[59], base[59], vUn)
	if unguarded[59] < base[59]*1.05 {
		t.Fatalf("the unguarded spike did no harm: loss at step 60 %.4f, without the spike %.4f", unguarded[59], base[59])
	}
	if st[29].Skipped != "" || st[29].GradNorm < 100*st[28].GradNorm {
		t.Fatalf("unguarded step 30: %+v (step 29 norm %v)", st[29], st[28].GradNorm)
	}
}

func TestSpikeResumeKeepsHistory(t *testing.T) {
	dir := prepare(t, strings.Repeat(kibText, 4), "")
	c := tinyConfig(dir, t.TempDir())
	c.Steps, c.EvalEvery, c.SpikeThreshold = 15, 0, 5
	tr := newTrainer(t, c)
	if _, err := tr.Run(context.Background(), RunOptions{PeakFLOPS: 1e9}); err != nil {
		t.Fatal(err)
	}
	ck, err := LoadCheckpoint(filepath.Join(c.Out, "latest"))
	if err != nil {
		dir, err2 := ResolveCheckpoint("latest", c.Out)
		if err2 != nil {
			t.Fatal(err, err2)
		}
		if ck, err = LoadCheckpoint(dir); err != nil {
			t.Fatal(err)
		}
	}
	if len(ck.State.SpikeNorms) != 15 {
		t.Fatalf("checkpoint holds %d norms, want 15", len(ck.State.SpikeNorms))
	}
	r := newTrainer(t, c)
	if err := r.Restore(ck); err != nil {
		t.Fatal(err)
	}
	if len(r.spike.norms) != 15 {
		t.Fatalf("restored %d norms", len(r.spike.norms))
	}
}

func TestPrecisionConfigErrors(t *testing.T) {
	for _, f := range []func(*Config){
		func(c *Config) { c.Precision = "fp16" },
		func(c *Config) { c.SpikeThreshold = 0.5 },
		func(c *Config) { c.SpikeWindow = -1 },
	} {
		c := DefaultConfig()
		f(&c)
		if err := c.Validate(); err == nil {
			t.Fatalf("accepted %+v", c)
		}
	}
}
