// ZeRO stages 1-3 against one process (real rank processes), the measured per-rank memory
// against the ZeRO paper's formulas, and DDP's buckets overlapping backward.
package dist_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/train/internal/disttest"
)

func TestZeROEqualsOneProcess(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.GradAccum = 2 // accumulation across micro-batches goes through the sharded gradients
	want := disttest.Reference(t, cfg)
	for _, c := range []struct{ stage, dp, tp int }{{1, 2, 1}, {2, 2, 1}, {3, 2, 1}, {3, 4, 1}, {2, 2, 2}} {
		cfg.ZeroStage, cfg.DP, cfg.TP = c.stage, c.dp, c.tp
		got := disttest.Run(t, c.dp*c.tp, cfg, nil)
		t.Logf("ZeRO-%d dp%d tp%d:", c.stage, c.dp, c.tp)
		disttest.CompareLosses(t, want, got.Losses, 1e-5)
		p, g, o, fp, fg, fo := memoryLine(t, got.Output[0])
		if i := strings.Index(got.Output[0], "memory per rank"); i >= 0 && testing.Verbose() {
			t.Logf("rank 0:\n%s", got.Output[0][i:])
		}
		if p != fp || g != fg || o != fo {
			t.Errorf("ZeRO-%d dp%d: measured params/grads/optimizer %d/%d/%d bytes, formula %d/%d/%d\n%s",
				c.stage, c.dp, p, g, o, fp, fg, fo, got.Output[0])
		}
		if c.stage == 3 {
			// 4 units in 4 slots: each is gathered once a step (after the optimizer changed
			// the weights) and stays in its slot for Backward and the second micro-batch.
			var n int64
			for _, l := range strings.Split(got.Output[0], "\n") {
				if _, err := fmt.Sscanf(l, "disttest gathers %d", &n); err == nil {
					break
				}
			}
			if n != 4*int64(cfg.Steps) {
				t.Errorf("ZeRO-3: %d unit gathers in %d steps, want %d", n, cfg.Steps, 4*cfg.Steps)
			}
		}
		// The stage's sharding is visible in the sizes: optimizer state 1/dp of DDP's from
		// stage 1, gradients from stage 2, parameters at stage 3.
		if ratio := float64(2*p) / float64(o); (c.stage == 3) != (ratio < 1.01 && ratio > 0.99) {
			t.Errorf("ZeRO-%d: params %d bytes vs optimizer %d", c.stage, p, o)
		}
	}
}

func TestBucketsOverlapBackward(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.Dim, cfg.Layers, cfg.FFN, cfg.Seq = 64, 4, 128, 32
	cfg.BucketMB = 0.01 // ~10 KiB: every unit its own bucket
	want := disttest.Reference(t, cfg)
	cfg.DP = 2
	got := disttest.Run(t, 2, cfg, nil)
	disttest.CompareLosses(t, want, got.Losses, 1e-5)
	var buckets, launched, early int64
	for _, l := range strings.Split(got.Output[0], "\n") {
		if _, err := fmt.Sscanf(l, "disttest overlap %d %d %d", &buckets, &launched, &early); err == nil {
			break
		}
	}
	t.Logf("%d buckets, %d allreduces launched inside Backward, %d finished before it returned", buckets, launched, early)
	if buckets < 4 || launched != buckets*int64(cfg.Steps) {
		t.Fatalf("%d buckets, %d launched over %d steps: want >= 4 buckets, each launched once a step", buckets, launched, cfg.Steps)
	}
	if early == 0 {
		t.Fatalf("no bucket's allreduce finished before Backward returned: nothing overlapped")
	}
}

func memoryLine(t *testing.T, out string) (p, g, o, fp, fg, fo int64) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if _, err := fmt.Sscanf(l, "disttest memory %d %d %d %d %d %d", &p, &g, &o, &fp, &fg, &fo); err == nil {
			return
		}
	}
	t.Fatalf("no memory line in\n%s", out)
	return
}

// A ZeRO-3 dp2 x tp2 run's checkpoint at step 10 holds the one-process tensors (every
// sharded weight and moment gathered to its place), and a ZeRO-2 dp2 run resumed from it
// continues the one-process curve; so does one process resumed from a ZeRO-1 dp4 checkpoint.
func TestZeROCheckpointAcrossGrids(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.MinLR = cfg.LR // no decay: the 10-step runs follow the 20-step run's schedule
	want, ref := disttest.ReferenceHalf(t, cfg)
	half := cfg
	half.Steps = cfg.Steps / 2

	for _, c := range []struct{ stage, dp, tp, resumeStage, resumeDP int }{{3, 2, 2, 2, 2}, {1, 4, 1, 0, 1}, {2, 2, 1, 3, 2}} {
		half.Out, half.ZeroStage, half.DP, half.TP = filepath.Join(t.TempDir(), "grid"), c.stage, c.dp, c.tp
		disttest.Run(t, c.dp*c.tp, half, nil)
		ck := disttest.LoadLatest(t, half.Out)
		disttest.CompareCheckpoints(t, ref, ck, 1e-5)

		resumed := cfg
		resumed.ZeroStage, resumed.DP, resumed.TP = c.resumeStage, c.resumeDP, 1
		got := disttest.Run(t, c.resumeDP, resumed, &disttest.Options{Env: []string{disttest.EnvResume + "=" + ck.Dir}})
		t.Logf("ZeRO-%d dp%d tp%d checkpoint resumed by ZeRO-%d dp%d:", c.stage, c.dp, c.tp, c.resumeStage, c.resumeDP)
		disttest.CompareLosses(t, want[10:], got.Losses, 1e-5)
	}
}

// Four blocks share two gather slots, so ZeRO-3 evicts and prefetches: still equal to one
// process, with 12 gathers a step (of 24 without keeping units in their slots): micro-batch 1
// gathers all 6 units in Forward and blocks 2 and 1 again in Backward, micro-batch 2 blocks
// 3, 4 in Forward and 2, 1 in Backward.
func TestZeRO3PrefetchEviction(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.Layers, cfg.GradAccum = 4, 2
	want := disttest.Reference(t, cfg)
	cfg.ZeroStage, cfg.DP = 3, 2
	got := disttest.Run(t, 2, cfg, nil)
	disttest.CompareLosses(t, want, got.Losses, 1e-5)
	var n int64
	for _, l := range strings.Split(got.Output[0], "\n") {
		if _, err := fmt.Sscanf(l, "disttest gathers %d", &n); err == nil {
			break
		}
	}
	if n != 12*int64(cfg.Steps) {
		t.Errorf("%d unit gathers in %d steps, want %d", n, cfg.Steps, 12*cfg.Steps)
	}
}

// Tied embeddings: unit 0 is used twice in Forward and its gradient collects both uses before
// GradReady(0); ZeRO-2 and -3 keep it in its own slot.
func TestZeROTiedEqualsOneProcess(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.Tied = true
	want := disttest.Reference(t, cfg)
	for _, stage := range []int{2, 3} {
		cfg.ZeroStage, cfg.DP = stage, 2
		got := disttest.Run(t, 2, cfg, nil)
		t.Logf("tied ZeRO-%d dp2:", stage)
		disttest.CompareLosses(t, want, got.Losses, 1e-5)
	}
}
