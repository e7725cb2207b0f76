// Tests of the convert command through runMain: llama2.c -> GGUF -> Hugging Face -> GGUF,
// llama2.c -> Hugging Face (SentencePiece tokenizer.json), quantized output, and usage errors.
package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
)

func TestConvertCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.gguf")
	if _, errs, code := runCmd(t, "synth", "--arch", "llama", "--dim", "256", "--heads", "4", "--kv-heads", "2", "--ffn", "96", "-o", in); code != 0 {
		t.Fatal(errs)
	}
	hf := filepath.Join(dir, "hf")
	out, errs, code := runCmd(t, "convert", in, hf, "--type", "f16")
	if code != 0 || !strings.Contains(out, "Hugging Face directory") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	q := filepath.Join(dir, "q.gguf")
	out, errs, code = runCmd(t, "convert", "--type", "q4_k", hf, q)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	if !strings.Contains(errs, "warning:") || !strings.Contains(errs, "ffn_down") {
		t.Errorf("no fallback warning for 96-wide ffn_down rows: %q", errs)
	}
	b, err := loader.Open(q, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := b.Model.Weights["blk.0.ffn_gate.weight"]; w.Type.String() != "Q4_K" {
		t.Errorf("ffn_gate %s", w.Type)
	}
	b.Close()

	bin := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	if out, errs, code := runCmd(t, "convert", bin, filepath.Join(dir, "s.gguf")); code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	// the SentencePiece vocabulary becomes a BPE tokenizer.json with byte_fallback that
	// tokenizes as tok512.bin does
	if out, errs, code := runCmd(t, "convert", bin, filepath.Join(dir, "s-hf")); code != 0 {
		t.Fatalf("SentencePiece to HF: exit %d: %s %s", code, out, errs)
	}
	orig, _, err := loader.OpenTokenizer(fixture.Path(t, "models", "stories260K", "tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	hfTok, _, err := loader.OpenTokenizer(filepath.Join(dir, "s-hf"))
	if err != nil {
		t.Fatal(err)
	}
	const text = "Once upon a time, Lily saw a big dog.\n\"Hi!\" 🙂"
	if a, b := orig.Encode(text, true, false), hfTok.Encode(text, true, false); !slices.Equal(a, b) || hfTok.Vocab().Merges == nil {
		t.Errorf("tokenizer.json of the converted directory: %v, tok512.bin: %v", b, a)
	}
	for _, bad := range [][]string{{"convert"}, {"convert", in}, {"convert", in, filepath.Join(dir, "x.gguf"), "--type", "q5_1"},
		{"convert", filepath.Join(dir, "missing.gguf"), filepath.Join(dir, "y.gguf")}} {
		if _, errs, code := runCmd(t, bad...); code == 0 || !strings.Contains(errs, "llmcloud convert:") {
			t.Errorf("%v: exit %d, %q", bad, code, errs)
		}
	}
}
