package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/data"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/spec"
)

// draftHeadData writes a prepared data directory of random tokens below vocab.
func draftHeadData(t *testing.T, vocab int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	m := &data.Meta{Format: data.FormatName, Version: data.Version, Tokenizer: "tokenizer.json",
		VocabSize: vocab, DType: data.DTypeFor(vocab)}
	for _, s := range []struct {
		name string
		n    int
		dst  *[]data.Shard
	}{{"train", 2000, &m.Train}, {"val", 600, &m.Val}} {
		ids := make([]int, s.n)
		for i := range ids {
			ids[i] = rng.IntN(vocab)
		}
		w, err := data.NewShardWriter(dir, s.name, vocab, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(ids); err != nil {
			t.Fatal(err)
		}
		if *s.dst, err = w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteMeta(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// `llmcloud train draft-head` trains heads on stories260K, reports validation and simulated
// acceptance and writes a head file for it; bad flags and a data set of another vocabulary
// are clear errors.
func TestTrainDraftHeadCommand(t *testing.T) {
	target := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	dir := draftHeadData(t, 512)
	out := filepath.Join(t.TempDir(), "head.gguf")
	stdout, _ := run(t, "train", "draft-head", "--model", target, "--data", dir, "--heads", "2", "--steps", "6",
		"--seq-len", "32", "--windows", "3", "--val-windows", "2", "--accept-prompts", "2", "--accept-tokens", "16",
		"--type", "f16", "--log-every", "3", "--token-input=false", "--out", out)
	for _, want := range []string{"step    6/6", "head 1 (token t+3)", "greedy speculation, k=2", "wrote " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	h, err := spec.LoadHead(out)
	if err != nil {
		t.Fatal(err)
	}
	if h.K() != 2 || h.Dim != 64 || h.Vocab != 512 || h.Target != "stories260K-f32" || h.Steps != 6 || h.TokenInput() {
		t.Errorf("head file: %d heads %dx%d for %q after %d steps", h.K(), h.Dim, h.Vocab, h.Target, h.Steps)
	}
	// The default: heads with token input.
	run(t, "train", "draft-head", "--model", target, "--data", dir, "--heads", "2", "--steps", "2", "--seq-len", "32",
		"--val-windows", "1", "--accept-prompts", "1", "--accept-tokens", "8", "--out", out)
	if h, err := spec.LoadHead(out); err != nil || !h.TokenInput() {
		t.Errorf("default head file: token input %v, %v", h != nil && h.TokenInput(), err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", dir, "--out", out}, "--model"},
		{[]string{"--model", target, "--data", dir, "--out", out, "--type", "q4_0"}, "--type"},
		{[]string{"--model", target, "--data", dir, "--out", out, "--heads", "0"}, "heads"},
		{[]string{"--model", target, "--data", draftHeadData(t, 600), "--out", out, "--steps", "1"}, "vocabulary of 600"},
	} {
		var o, e strings.Builder
		code := runMain(append([]string{"train", "draft-head"}, c.args...), &o, &e)
		if code == 0 || !strings.Contains(e.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to name %q", c.args, code, e.String(), c.want)
		}
	}
}
