// Tests of the synth command through runMain: presets and shape flags, GGUF and Hugging Face
// output that loads and runs, and usage errors.
package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
)

func runCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestSynthCommand(t *testing.T) {
	dir := t.TempDir()
	gg := filepath.Join(dir, "s.gguf")
	if out, errs, code := runCmd(t, "synth", "--preset", "stories15m", "--layers", "1", "--vocab", "512", "--type", "q8_0", "-o", gg); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	b, err := loader.Open(gg, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.Model.Config
	if c.Dim != 288 || c.Layers != 1 || c.Heads != 6 || c.FFN != 768 || c.Vocab != 512 || !c.Tied || b.Tok.VocabSize() != 258 {
		t.Errorf("config %+v, %d tokens", c, b.Tok.VocabSize())
	}
	if w := b.Model.Weights["blk.0.attn_q.weight"]; w.Type.String() != "Q8_0" {
		t.Errorf("attn_q is %s", w.Type)
	}
	ids := b.Tok.Encode("hello", true, false)
	if _, err := b.Model.Forward(b.Model.NewCache(len(ids)), ids, 0, false); err != nil {
		t.Fatal(err)
	}
	b.Close()

	tokDir := fixture.Path(t, "models", "gpt2-tokenizer")
	hf := filepath.Join(dir, "hf")
	if out, errs, code := runCmd(t, "synth", "--arch", "qwen3", "--dim", "32", "--heads", "2", "--head-dim", "32", "--layers", "1",
		"--tokenizer", tokDir, "--seed", "3", "--type", "bf16", "-o", hf); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	b, err = loader.Open(hf, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if c := b.Model.Config; c.Arch != "qwen3" || c.HeadDim != 32 || c.Vocab != 50257 || !c.QKNorm {
		t.Errorf("config %+v", c)
	}
	if ids := b.Tok.Encode("Hello world", false, false); len(ids) != 2 {
		t.Errorf("GPT-2 tokens %v", ids)
	}

	for _, bad := range [][]string{
		{"synth", "--preset", "nope", "-o", filepath.Join(dir, "x.gguf")},
		{"synth", "--arch", "llama"},
		{"synth", "--arch", "gemma", "-o", filepath.Join(dir, "x.gguf")},
		{"synth", "--type", "q4_k", "-o", filepath.Join(dir, "hfq")},
	} {
		_, errs, code := runCmd(t, bad...)
		if code == 0 || !strings.Contains(errs, "llmcloud synth:") {
			t.Errorf("%v: exit %d, stderr %q", bad, code, errs)
		}
	}
}
