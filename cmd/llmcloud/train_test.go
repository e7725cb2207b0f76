package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/loader"
)

// The whole path from text to a served file: `tokenizer train`, `data prepare`, `train` (with a
// YAML config overridden by flags, checkpoints, an export), `train --resume` to more steps,
// `train export` of the checkpoint, and `generate` on the export.
func TestTrainCommandEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for i := range 40 {
		text.WriteString("The ferry left the harbour at six and the gulls followed it out to the island.\n")
		if i%4 == 3 {
			text.WriteString("\n")
		}
	}
	txt := filepath.Join(dir, "text.txt")
	os.WriteFile(txt, []byte(text.String()), 0o644)
	tok := filepath.Join(dir, "tok")
	run(t, "tokenizer", "train", "--vocab-size", "300", "--input", txt, "-o", tok)
	dataDir := filepath.Join(dir, "data")
	run(t, "data", "prepare", "--tokenizer", tok, "--input", txt, "--val-fraction", "0.2", "-o", dataDir)

	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte("dim: 32\nlayers: 1\nheads: 2\nbatch: 2\nseq: 16\nsteps: 999\nlr: 0.003\nwarmup: 2\n"), 0o644)
	out := filepath.Join(dir, "run")
	gguf := filepath.Join(dir, "end.gguf")
	stdout, stderr := run(t, "train", "--config", cfg, "--data", dataDir, "--out", out, "--steps", "6",
		"--eval-every", "3", "--eval-batches", "1", "--log-every", "3", "--threads", "1", "--export-gguf", gguf)
	for _, want := range []string{"trained 6 steps", "val ppl", "loss curve"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("train stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "step 3/6 | loss") || !strings.Contains(stderr, "step 3 | val loss") {
		t.Errorf("train progress lines missing:\n%s", stderr)
	}
	stdout, _ = run(t, "train", "--resume", "latest", "--out", out, "--steps", "8", "--threads", "1")
	if !strings.Contains(stdout, "trained 8 steps") {
		t.Errorf("resumed run: %s", stdout)
	}
	// Resuming a finished run without more steps says what to pass.
	_, stderr = run(t, "train", "--resume", "latest", "--out", out, "--threads", "1")
	if !strings.Contains(stderr, "warning: the run's steps (from its checkpoint or --config) 8 is not above step 8 of checkpoint") ||
		!strings.Contains(stderr, "pass --steps N with N > 8") {
		t.Errorf("resume at the last step: no warning:\n%s", stderr)
	}
	// --resume auto finds the run directory in the config file (no --out given).
	cfgOut := filepath.Join(dir, "run-out.yaml")
	os.WriteFile(cfgOut, []byte("out: "+out+"\n"), 0o644)
	stdout, _ = run(t, "train", "--config", cfgOut, "--resume", "auto", "--steps", "9", "--threads", "1")
	if !strings.Contains(stdout, "trained 9 steps") {
		t.Errorf("resume auto with out in the config: %s", stdout)
	}
	hf := filepath.Join(dir, "hf")
	q8 := filepath.Join(dir, "q8.gguf")
	run(t, "train", "export", "--ckpt", out, "--hf", hf)
	run(t, "train", "export", "--ckpt", out, "--gguf", q8, "--type", "q8_0", "--name", "tiny")
	for _, p := range []string{gguf, hf, q8} {
		b, err := loader.Open(p, loader.Options{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b.Model.Config.Dim != 32 || b.Model.Config.Vocab != b.Tok.VocabSize() {
			t.Errorf("%s: config %+v, tokenizer %d tokens", p, b.Model.Config, b.Tok.VocabSize())
		}
		if p == q8 && b.Name != "tiny" {
			t.Errorf("%s: name %q, want tiny", p, b.Name)
		}
		b.Close()
	}
	stdout, _ = run(t, "generate", "--model", q8, "--prompt", "The ferry", "--max-tokens", "4", "--threads", "1", "--temperature", "0")
	if strings.TrimSpace(stdout) == "" {
		t.Error("generate on the exported model printed nothing")
	}

	// Bad input: a clear error, nothing written.
	var o, e strings.Builder
	if code := runMain([]string{"train", "--data", dataDir, "--dim", "30", "--heads", "4"}, &o, &e); code != 2 || !strings.Contains(e.String(), "--heads") {
		t.Errorf("dim 30 / heads 4: exit %d, stderr %q", code, e.String())
	}
	if code := runMain([]string{"train", "--resume", filepath.Join(dir, "nowhere")}, &o, &e); code != 1 || !strings.Contains(e.String(), "nowhere") {
		t.Errorf("resume from a missing directory: exit %d, stderr %q", code, e.String())
	}
}
