// Tensor-parallel and combined grids against one process (real rank processes, as in
// ddp_test.go), and checkpoints across grids: a dp2 x tp2 run's checkpoint holds the
// one-process tensors, and a run resumed from it under another grid continues the curve.
package dist_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/train"
	"github.com/llmcloud/llmcloud/train/internal/disttest"
)

func TestTPAndDPxTPEqualOneProcess(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	want := disttest.Reference(t, cfg)
	for _, g := range []struct{ dp, tp int }{{1, 2}, {2, 2}} {
		cfg.DP, cfg.TP = g.dp, g.tp
		got := disttest.Run(t, g.dp*g.tp, cfg, nil)
		t.Logf("dp%d x tp%d:", g.dp, g.tp)
		disttest.CompareLosses(t, want, got.Losses, 1e-5)
	}
}

// A dp2 x tp2 run saves at step 10 a checkpoint whose full tensors match the one-process
// run's; a tp2 run resumed from it reproduces the one-process losses of steps 11-20.
func TestCheckpointAcrossGrids(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.MinLR = cfg.LR // no decay: the 10-step runs follow the 20-step run's schedule
	want := disttest.Reference(t, cfg)

	half := cfg
	half.Steps, half.Out = 10, filepath.Join(t.TempDir(), "ref")
	disttest.Reference(t, half)
	refCk := loadLatest(t, half.Out)

	half.Out, half.DP, half.TP = filepath.Join(t.TempDir(), "grid"), 2, 2
	disttest.Run(t, 4, half, nil)
	ck := loadLatest(t, half.Out)
	if ck.State.Step != 10 || len(ck.Tensors) != len(refCk.Tensors) {
		t.Fatalf("checkpoint at step %d with %d tensors, want 10 and %d", ck.State.Step, len(ck.Tensors), len(refCk.Tensors))
	}
	for name, ref := range refCk.Tensors {
		got := ck.Tensors[name]
		if len(got) != len(ref) {
			t.Fatalf("%s: %d values, want %d", name, len(got), len(ref))
		}
		var num, den float64
		for i := range ref {
			num += sq(float64(got[i]) - float64(ref[i]))
			den += sq(float64(ref[i]))
		}
		if rel := math.Sqrt(num / max(den, 1e-30)); rel > 1e-4 {
			t.Errorf("%s: relative L2 difference %.2e from the one-process checkpoint", name, rel)
		}
	}

	resumed := cfg
	resumed.DP, resumed.TP = 1, 2
	got := disttest.Run(t, 2, resumed, &disttest.Options{Env: []string{disttest.EnvResume + "=" + ck.Dir}})
	if len(got.Losses) != 10 {
		t.Fatalf("resumed run logged %d steps, want 10", len(got.Losses))
	}
	disttest.CompareLosses(t, want[10:], got.Losses, 1e-5)
}

func loadLatest(t *testing.T, runDir string) *train.Checkpoint {
	t.Helper()
	dir, err := train.ResolveCheckpoint(runDir, "")
	if err != nil {
		t.Fatal(err)
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ck
}

func sq(x float64) float64 { return x * x }
