// Package disttest is the multi-process test harness of distributed training: a tiny token
// shard set written by the test, the one-process reference run in the test's own process, and
// N real rank processes (the test binary re-executed with torchrun's environment, talking over
// comm's real sockets) whose losses are compared with the reference.
//
// A test package uses it by calling Main from its TestMain:
//
//	func TestMain(m *testing.M) { disttest.Main(m) }
//
//	func TestDP2(t *testing.T) {
//		cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
//		want := disttest.Reference(t, cfg)
//		cfg.DP = 2
//		got := disttest.Run(t, 2, cfg, nil)
//		disttest.CompareLosses(t, want, got.Losses, 1e-5)
//	}
//
// This file implements the data, the configs, the reference and the comparison; child.go the
// rank processes.
package disttest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/data"
	"github.com/llmcloud/llmcloud/tokenizer"
	"github.com/llmcloud/llmcloud/train"
)

// Data writes a shard set of a vocab-token vocabulary under a fresh temporary directory and
// returns it: tokens training tokens and tokens/8 validation tokens from a fixed sparse Markov
// chain (each token has 4 likely successors), so a model's loss falls over a few steps.
func Data(t testing.TB, vocab, tokens int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := WriteData(dir, vocab, tokens); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteData is Data into dir (created).
func WriteData(dir string, vocab, tokens int) error {
	if vocab < 8 || vocab > 257 || tokens < 64 {
		return fmt.Errorf("disttest: vocab %d (8..257) or tokens %d (>= 64) out of range", vocab, tokens)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(vocab), 17))
	next := make([][4]int, vocab)
	for i := range next {
		for k := range next[i] {
			next[i][k] = r.IntN(vocab)
		}
	}
	// A byte-level vocabulary of the first vocab-1 bytes and <|endoftext|> (BOS and EOS), so
	// exports of the trained model carry a real tokenizer.json.
	v := &tokenizer.Vocab{Model: "gpt2", Pre: "gpt-2", BOS: vocab - 1, EOS: vocab - 1, UNK: -1, PAD: -1, EOT: -1}
	for b := range vocab - 1 {
		v.Tokens = append(v.Tokens, string(tokenizer.ByteLevelRune(byte(b))))
		v.Types = append(v.Types, tokenizer.TypeNormal)
	}
	v.Tokens = append(v.Tokens, "<|endoftext|>")
	v.Types = append(v.Types, tokenizer.TypeControl)
	js, err := tokenizer.MarshalHFJSON(v)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), js, 0o644); err != nil {
		return err
	}
	m := &data.Meta{Format: data.FormatName, Version: data.Version, Tokenizer: "tokenizer.json",
		VocabSize: vocab, DType: data.DTypeFor(vocab), BOSID: vocab - 1, EOSID: vocab - 1}
	for _, sp := range []struct {
		name string
		n    int
		dst  *[]data.Shard
	}{{"train", tokens, &m.Train}, {"val", tokens / 8, &m.Val}} {
		w, err := data.NewShardWriter(dir, sp.name, vocab, int64(tokens/2+1))
		if err != nil {
			return err
		}
		ids := make([]int, sp.n)
		cur := 0
		for i := range ids {
			if r.IntN(8) == 0 {
				cur = r.IntN(vocab)
			} else {
				cur = next[cur][r.IntN(4)]
			}
			ids[i] = cur
		}
		if err := w.Write(ids); err != nil {
			return err
		}
		if *sp.dst, err = w.Close(); err != nil {
			return err
		}
	}
	return data.WriteMeta(dir, m)
}

// TinyConfig is a small model (dim 32, 2 layers, 4 heads, 2 kv heads, ffn 64) on dataDir for
// 20 steps of a global micro-batch of 4 x 16 tokens, with warmup, clipping and weight decay
// on, one thread, no validation during the run and no files.
func TinyConfig(dataDir string) train.Config {
	c := train.DefaultConfig()
	c.Data = dataDir
	c.Dim, c.Layers, c.Heads, c.KVHeads, c.FFN = 32, 2, 4, 2, 64
	c.Batch, c.Seq, c.Steps, c.GradAccum = 4, 16, 20, 1
	c.LR, c.MinLR, c.Warmup, c.Clip = 1e-2, 1e-3, 5, 1.0
	c.EvalEvery, c.EvalBatches, c.LogEvery, c.Threads = 0, 2, 1000, 1
	c.TimeoutSec = 60
	return c
}

// Reference trains cfg in this process with one rank (DP, TP, PP set to 1, ZeRO off) for
// cfg.Steps steps and returns each step's loss; with cfg.Out set it saves a checkpoint there
// at the end.
func Reference(t testing.TB, cfg train.Config) []float64 {
	t.Helper()
	return ReferenceTrainer(t, cfg, nil)
}

// ReferenceTrainer is Reference that hands the trainer to after (nil: nothing) before it is
// closed, for tests that inspect its weights.
func ReferenceTrainer(t testing.TB, cfg train.Config, after func(*train.Trainer)) []float64 {
	t.Helper()
	cfg.DP, cfg.TP, cfg.PP, cfg.ZeroStage, cfg.MicroBatches = 1, 1, 1, 0, 0
	d, closeData, err := train.OpenData(cfg.Data, cfg.Batch, cfg.Seq)
	if err != nil {
		t.Fatal(err)
	}
	defer closeData()
	tr, err := train.New(cfg, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for range cfg.Steps {
		s, err := tr.Step()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, float64(s.Loss))
	}
	if cfg.Out != "" {
		if _, err := tr.Save(); err != nil {
			t.Fatal(err)
		}
	}
	if after != nil {
		after(tr)
	}
	return losses
}

// CompareLosses fails t unless got has as many steps as want and every step's relative
// difference is below tol; it logs the largest difference.
func CompareLosses(t testing.TB, want, got []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d losses, want %d", len(got), len(want))
	}
	worst, at := 0.0, 0
	for i := range want {
		rel := math.Abs(got[i]-want[i]) / math.Max(math.Abs(want[i]), 1e-30)
		if !(rel <= worst) { // NaN counts as worst
			worst, at = rel, i
		}
	}
	t.Logf("losses %.5f -> %.5f over %d steps; largest relative difference %.2e at step %d",
		want[0], want[len(want)-1], len(want), worst, at+1)
	if !(worst < tol) {
		for i := range want {
			t.Logf("step %2d: want %.8f got %.8f", i+1, want[i], got[i])
		}
		t.Fatalf("step %d: loss %.8f, one process %.8f: relative difference %.2e >= %.0e", at+1, got[at], want[at], worst, tol)
	}
	if want[len(want)-1] >= want[0] {
		t.Fatalf("the reference loss did not fall (%.4f -> %.4f): the comparison would prove little", want[0], want[len(want)-1])
	}
}
