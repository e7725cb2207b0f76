// This file tests `llmcloud train` on a Qwen3 model, from text to an exported GGUF.
package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/loader"
)

// `llmcloud train --arch qwen3` trains 5 steps and exports a GGUF that loader opens as qwen3
// (NeoX RoPE, q/k norms); the checkpoint's export (`train export`) gives the same logits, and
// `generate` runs on it.
func TestTrainCommandQwen3(t *testing.T) {
	dir := t.TempDir()
	txt := filepath.Join(dir, "text.txt")
	os.WriteFile(txt, []byte(strings.Repeat("The ferry left the harbour at six and the gulls followed it.\n", 30)), 0o644)
	tok := filepath.Join(dir, "tok")
	run(t, "tokenizer", "train", "--vocab-size", "280", "--input", txt, "-o", tok)
	dataDir := filepath.Join(dir, "data")
	run(t, "data", "prepare", "--tokenizer", tok, "--input", txt, "--val-fraction", "0.2", "-o", dataDir)
	out, gguf, again := filepath.Join(dir, "run"), filepath.Join(dir, "q3.gguf"), filepath.Join(dir, "again.gguf")
	stdout, _ := run(t, "train", "--arch", "qwen3", "--data", dataDir, "--out", out, "--dim", "32", "--layers", "2",
		"--heads", "4", "--kv-heads", "2", "--batch", "2", "--seq", "16", "--steps", "5", "--warmup", "1",
		"--eval-batches", "1", "--threads", "1", "--export-gguf", gguf)
	if !strings.Contains(stdout, "trained 5 steps") {
		t.Errorf("train: %s", stdout)
	}
	run(t, "train", "export", "--ckpt", out, "--gguf", again)
	var logits [][]float32
	for _, p := range []string{gguf, again} {
		b, err := loader.Open(p, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := b.Model.Config
		if c.Arch != "qwen3" || !c.QKNorm || !c.RopeNeoX || c.Dim != 32 {
			t.Errorf("%s: config %+v", p, c)
		}
		lg, err := b.Model.Forward(b.Model.NewCache(8), []int{1, 2, 3, 4, 5, 6, 7, 8}, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, lg)
		b.Close()
	}
	if !slices.Equal(logits[0], logits[1]) {
		t.Error("the run's export and the checkpoint's give different logits")
	}
	stdout, _ = run(t, "generate", "--model", gguf, "--prompt", "The ferry", "--max-tokens", "4", "--threads", "1", "--temperature", "0")
	if strings.TrimSpace(stdout) == "" {
		t.Error("generate on the exported qwen3 model printed nothing")
	}
}
