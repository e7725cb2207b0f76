package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

// `--w8a8` on an AWQ checkpoint (a Hugging Face directory, whose tensors keep their file names
// and load as Q4_0Z) converts its block weights too: the perplexity moves (the weights really
// are replaced) and stays within 3% of the AWQ model's.
func TestW8A8OnAWQ(t *testing.T) {
	text := fixture.Path(t, "reference", "brown_val_100k.txt")
	dir := filepath.Join(t.TempDir(), "awq")
	run(t, "quantize-hf", filepath.Join("..", "..", "defaultmodel", "default.gguf"), dir, "--format", "awq")
	ppl := func(extra ...string) (float64, string) {
		args := append([]string{"perplexity", "--model", dir, "--file", text, "--ctx", "128", "--chunks", "6", "--threads", "2"}, extra...)
		out, errs := run(t, args...)
		var p float64
		if _, err := fmtSscanf(out, &p); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return p, errs
	}
	base, _ := ppl()
	w8, errs := ppl("--w8a8", "--w8a8-calibration", text, "--w8a8-calib-tokens", "512")
	if !strings.Contains(errs, "w8a8: 28 weights converted (20 smoothed") {
		t.Errorf("stderr lacks the conversion line:\n%s", errs)
	}
	t.Logf("PPL AWQ %.4f, AWQ -> W8A8 %.4f", base, w8)
	if w8 == base || w8/base > 1.03 || w8/base < 0.97 {
		t.Errorf("W8A8 PPL %v, AWQ %v: want different and within 3%%", w8, base)
	}
}
