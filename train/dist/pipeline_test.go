// Pipeline-parallel runs against one process: real rank processes (the test binary
// re-executed by train/internal/disttest) train the same tiny model on the same data and seed
// with PP 2 and 4 under both schedules, DP 2 x PP 2 and PP 2 x TP 2; every step's loss must
// match the one-process run within 1e-5 relative over 20 steps.
package dist_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/train"
	"github.com/llmcloud/llmcloud/train/internal/disttest"
)

func TestPipelineEqualsOneProcess(t *testing.T) {
	data := disttest.Data(t, 64, 1<<14)
	for _, c := range []struct {
		dp, pp, tp, layers, micro int
		sched                     string
		tied                      bool
	}{
		{1, 2, 1, 2, 4, "1f1b", true},
		{1, 2, 1, 3, 2, "naive", false}, // uneven split: stage 0 one block, stage 1 two
		{1, 4, 1, 4, 4, "1f1b", true},
		{1, 4, 1, 4, 4, "naive", false},
		{2, 2, 1, 2, 2, "1f1b", true},
		{1, 2, 2, 2, 2, "1f1b", true}, // tensor-parallel stages
	} {
		t.Run(fmt.Sprintf("dp%d_pp%d_tp%d_%s_m%d_tied%v", c.dp, c.pp, c.tp, c.sched, c.micro, c.tied), func(t *testing.T) {
			cfg := disttest.TinyConfig(data)
			cfg.Layers, cfg.Tied = c.layers, c.tied
			want := disttest.Reference(t, cfg)
			cfg.DP, cfg.PP, cfg.TP, cfg.MicroBatches, cfg.PPSchedule = c.dp, c.pp, c.tp, c.micro, c.sched
			got := disttest.Run(t, c.dp*c.pp*c.tp, cfg, nil)
			disttest.CompareLosses(t, want, got.Losses, 1e-5)
		})
	}
}

// Micro-batches that do not divide a data-parallel rank's rows, and ZeRO on pipeline stages
// (not supported), are an error on every rank.
func TestPipelineBadConfigs(t *testing.T) {
	data := disttest.Data(t, 64, 1<<12)
	for _, c := range []struct {
		micro, zero int
		want        string
	}{{3, 0, "do not split into --micro-batches 3"}, {2, 1, "--zero-stage 1 with --pp 2 is not supported"}} {
		cfg := disttest.TinyConfig(data)
		cfg.PP, cfg.MicroBatches, cfg.ZeroStage = 2, c.micro, c.zero // 4 rows
		res := disttest.Run(t, 2, cfg, &disttest.Options{AllowFail: true})
		for r, err := range res.Errs {
			if err == nil || !strings.Contains(res.Output[r], c.want) {
				t.Errorf("rank %d: exit %v, output:\n%s", r, err, res.Output[r])
			}
		}
	}
}

// A pipeline run's checkpoint is the one-process checkpoint: a dp2 x pp2 run's checkpoint at
// step 10 holds the one-process run's tensors, one process resumed from it and a pp2 run
// resumed from a one-process checkpoint both continue the uninterrupted loss curve, and the
// pipeline's validation loss (forwards only) is the one-process one.
func TestPipelineCheckpointAcrossGrids(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.Layers, cfg.MinLR = 3, cfg.LR // no decay: 10-step runs follow the 20-step schedule
	want, refCk := disttest.ReferenceHalf(t, cfg)

	half := cfg
	half.Steps = cfg.Steps / 2

	half.Out, half.DP, half.PP, half.MicroBatches = filepath.Join(t.TempDir(), "grid"), 2, 2, 2
	disttest.Run(t, 4, half, nil)
	ck := disttest.LoadLatest(t, half.Out)
	disttest.CompareCheckpoints(t, refCk, ck, 1e-4)

	// One process continues the dp2 x pp2 run.
	d, closeData, err := train.OpenData(cfg.Data, cfg.Batch, cfg.Seq)
	if err != nil {
		t.Fatal(err)
	}
	defer closeData()
	one, err := train.New(cfg, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := one.Restore(ck); err != nil {
		t.Fatal(err)
	}
	var rest []float64
	for one.StepNum() < cfg.Steps {
		s, err := one.Step()
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, float64(s.Loss))
	}
	disttest.CompareLosses(t, want[10:], rest, 1e-5)
	oneEval, _, ok, err := one.Eval()
	if err != nil || !ok {
		t.Fatalf("one-process eval: %v (ok %v)", err, ok)
	}

	// A pp2 run continues the one-process checkpoint and validates through the pipeline.
	resumed := cfg
	resumed.PP = 2
	got := disttest.Run(t, 2, resumed, &disttest.Options{Env: []string{
		disttest.EnvResume + "=" + refCk.Dir, disttest.EnvEval + "=1"}})
	disttest.CompareLosses(t, want[10:], got.Losses, 1e-5)
	for r, out := range got.Output {
		v, ok := disttest.ParseEval(out)
		if !ok || math.Abs(v-oneEval)/oneEval > 1e-5 {
			t.Errorf("rank %d: validation loss %v (printed %v), one process %.8f", r, v, ok, oneEval)
		}
	}
}
