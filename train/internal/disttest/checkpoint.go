// This file implements checkpoint helpers for the grid tests: the latest checkpoint of a run
// directory, and the comparison of a grid run's checkpoint with the one-process run's.
package disttest

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/train"
)

// LoadLatest loads the latest checkpoint of the run directory runDir.
func LoadLatest(t testing.TB, runDir string) *train.Checkpoint {
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

// ReferenceHalf runs cfg in one process twice: the whole run, and its first half (Steps/2,
// into a run directory of its own). It returns the whole run's losses and the half run's last
// checkpoint, what the checkpoint-across-grids tests compare a grid run's checkpoint and its
// resumed losses with. cfg.MinLR should equal cfg.LR, so that the half run follows the whole
// run's schedule.
func ReferenceHalf(t testing.TB, cfg train.Config) ([]float64, *train.Checkpoint) {
	t.Helper()
	want := Reference(t, cfg)
	half := cfg
	half.Steps, half.Out = cfg.Steps/2, filepath.Join(t.TempDir(), "ref")
	Reference(t, half)
	return want, LoadLatest(t, half.Out)
}

// CompareCheckpoints fails t unless got is at ref's step with ref's tensors, each within a
// relative L2 difference of tol.
func CompareCheckpoints(t testing.TB, ref, got *train.Checkpoint, tol float64) {
	t.Helper()
	if got.State.Step != ref.State.Step || len(got.Tensors) != len(ref.Tensors) {
		t.Fatalf("checkpoint at step %d with %d tensors, want %d and %d", got.State.Step, len(got.Tensors), ref.State.Step, len(ref.Tensors))
	}
	for name, r := range ref.Tensors {
		g := got.Tensors[name]
		if len(g) != len(r) {
			t.Fatalf("%s: %d values, want %d", name, len(g), len(r))
		}
		var num, den float64
		for i := range r {
			d := float64(g[i]) - float64(r[i])
			num += d * d
			den += float64(r[i]) * float64(r[i])
		}
		if rel := math.Sqrt(num / max(den, 1e-30)); rel > tol {
			t.Errorf("%s: relative L2 difference %.2e from the reference checkpoint", name, rel)
		}
	}
}
