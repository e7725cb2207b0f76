package train

import (
	"math"
	"slices"
	"testing"
)

// tinyConfig is a small model on a small data set, fast enough for the normal test run.
func tinyConfig(dataDir, out string) Config {
	c := DefaultConfig()
	c.Data, c.Out = dataDir, out
	c.Dim, c.Layers, c.Heads, c.KVHeads, c.FFN = 32, 2, 4, 2, 64
	c.Batch, c.Seq, c.Steps = 2, 16, 100
	c.LR, c.MinLR, c.Warmup = 3e-3, 3e-4, 10
	c.EvalEvery, c.EvalBatches, c.LogEvery, c.Threads = 25, 2, 1000, 2
	return c
}

func newTrainer(t *testing.T, c Config) *Trainer {
	t.Helper()
	d, closeData, err := OpenData(c.Data, c.Batch, c.Seq)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeData() })
	tr, err := New(c, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// run trains to c.Steps and returns every step's loss, by step.
func run(t *testing.T, tr *Trainer) map[int]float32 {
	t.Helper()
	losses := map[int]float32{}
	for tr.StepNum() < tr.Cfg.Steps {
		s, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		losses[s.Step] = s.Loss
	}
	return losses
}

// TestResumeIsExact is the acceptance "100 steps straight and 50 + resume + 50 give identical
// losses": a run of 100 steps, a run stopped and checkpointed at 50, and a fresh process-like
// trainer resumed from that checkpoint; losses and final weights equal bit for bit.
func TestResumeIsExact(t *testing.T) {
	dataDir := prepare(t, kibText+"\n\n"+kibText[:600], kibText[200:900])
	straight := newTrainer(t, tinyConfig(dataDir, t.TempDir()))
	want := run(t, straight)

	c := tinyConfig(dataDir, t.TempDir())
	first := newTrainer(t, c)
	got := map[int]float32{}
	for first.StepNum() < 50 {
		s, err := first.Step()
		if err != nil {
			t.Fatal(err)
		}
		got[s.Step] = s.Loss
	}
	dir, err := first.Save()
	if err != nil {
		t.Fatal(err)
	}
	ckDir, err := ResolveCheckpoint("latest", c.Out)
	if err != nil || ckDir != dir {
		t.Fatalf("latest resolves to %q (%v), saved %q", ckDir, err, dir)
	}
	ck, err := LoadCheckpoint(ckDir)
	if err != nil {
		t.Fatal(err)
	}
	if ck.State.Config != c {
		t.Errorf("checkpoint config %+v, want %+v", ck.State.Config, c)
	}
	second := newTrainer(t, ck.State.Config)
	if err := second.Restore(ck); err != nil {
		t.Fatal(err)
	}
	for k, v := range run(t, second) {
		got[k] = v
	}
	if len(got) != 100 {
		t.Fatalf("%d losses, want 100", len(got))
	}
	for s := 1; s <= 100; s++ {
		if math.Float32bits(got[s]) != math.Float32bits(want[s]) {
			t.Fatalf("step %d: loss %v after resume, %v straight", s, got[s], want[s])
		}
	}
	w1, _ := straight.Net.Flat()
	w2, _ := second.Net.Flat()
	if !slices.Equal(w1, w2) {
		t.Error("final weights differ between the straight and the resumed run")
	}
	if want[100] >= want[1] {
		t.Errorf("loss did not fall: %v at step 1, %v at step 100", want[1], want[100])
	}
}

// TestSameSeedSameLosses: two runs with one seed agree bit for bit; another seed differs.
func TestSameSeedSameLosses(t *testing.T) {
	dataDir := prepare(t, kibText, "")
	c := tinyConfig(dataDir, "")
	c.Steps = 10
	a, b := run(t, newTrainer(t, c)), run(t, newTrainer(t, c))
	c.Seed++
	other := run(t, newTrainer(t, c))
	for s := 1; s <= 10; s++ {
		if math.Float32bits(a[s]) != math.Float32bits(b[s]) {
			t.Fatalf("step %d: losses %v and %v with the same seed", s, a[s], b[s])
		}
	}
	if a[1] == other[1] {
		t.Errorf("seeds %d and %d give the same first loss %v", c.Seed-1, c.Seed, a[1])
	}
}

// TestMemorize is the acceptance "a tiny model memorizes a 1 KiB text to loss below 0.05".
func TestMemorize(t *testing.T) {
	dataDir := prepare(t, kibText, "")
	c := DefaultConfig()
	c.Data = dataDir
	c.Dim, c.Layers, c.Heads, c.FFN = 64, 2, 4, 128
	c.Batch, c.Seq, c.Steps = 4, 64, 300
	c.LR, c.MinLR, c.Warmup, c.WeightDecay = 1e-2, 1e-3, 20, 0
	c.Threads = 2
	tr := newTrainer(t, c)
	losses := run(t, tr)
	t.Logf("loss: step 1 %.3f, 100 %.3f, 200 %.3f, %d %.4f", losses[1], losses[100], losses[200], c.Steps, losses[c.Steps])
	if l := losses[c.Steps]; !(l < 0.05) {
		t.Fatalf("final loss %v, want < 0.05", l)
	}
}
