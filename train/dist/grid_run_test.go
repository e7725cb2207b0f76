// Tensor-parallel and combined grids against one process (real rank processes, as in
// ddp_test.go), and checkpoints across grids: a dp2 x tp2 run's checkpoint holds the
// one-process tensors, and a run resumed from it under another grid continues the curve.
package dist_test

import (
	"path/filepath"
	"testing"

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
	want, refCk := disttest.ReferenceHalf(t, cfg)

	half := cfg
	half.Steps = cfg.Steps / 2

	half.Out, half.DP, half.TP = filepath.Join(t.TempDir(), "grid"), 2, 2
	disttest.Run(t, 4, half, nil)
	ck := disttest.LoadLatest(t, half.Out)
	disttest.CompareCheckpoints(t, refCk, ck, 1e-4)

	resumed := cfg
	resumed.DP, resumed.TP = 1, 2
	got := disttest.Run(t, 2, resumed, &disttest.Options{Env: []string{disttest.EnvResume + "=" + ck.Dir}})
	if len(got.Losses) != 10 {
		t.Fatalf("resumed run logged %d steps, want 10", len(got.Losses))
	}
	disttest.CompareLosses(t, want[10:], got.Losses, 1e-5)
}
