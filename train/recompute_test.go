package train

import (
	"context"
	"testing"
)

// TestRecompute: --recompute (activation checkpointing) gives the same losses bit for bit as
// keeping the activations, and the run reports HFU above MFU by the recomputed forward.
func TestRecompute(t *testing.T) {
	dataDir := prepare(t, kibText+"\n\n"+kibText[:600], "")
	c := tinyConfig(dataDir, "")
	c.Steps, c.EvalEvery = 8, 0
	want := run(t, newTrainer(t, c))
	c.Recompute = true
	tr := newTrainer(t, c)
	got := run(t, tr)
	for s, w := range want {
		if got[s] != w {
			t.Errorf("step %d: loss %v with recompute, %v without", s, got[s], w)
		}
	}
	c.Steps = 10
	tr.Cfg.Steps = c.Steps
	sum, err := tr.Run(context.Background(), RunOptions{PeakFLOPS: 1e12})
	if err != nil {
		t.Fatal(err)
	}
	model, hw := tr.Net.FLOPsPerToken(c.Seq)
	if !(hw > model) {
		t.Fatalf("FLOPsPerToken with recompute: hardware %g, model %g", hw, model)
	}
	if r := sum.HFU / sum.MFU; r < 0.999*hw/model || r > 1.001*hw/model {
		t.Errorf("HFU/MFU = %.4f, want hardware/model FLOPs = %.4f", r, hw/model)
	}
}
