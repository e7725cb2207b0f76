package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

// `--w8a8` converts the block matmuls of stories260K (calibrated on one text, statistics
// saved and reused from .json), its perplexity stays within 2% of the float model's, `bench
// latency` reports the W8A8 model, and the flags' misuse is a usage error.
func TestW8A8Flags(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	text := fixture.Path(t, "reference", "brown_val_100k.txt")
	stats := filepath.Join(t.TempDir(), "stats.json")
	ppl := func(extra ...string) (float64, string) {
		args := append([]string{"perplexity", "--model", model, "--file", text, "--ctx", "128", "--chunks", "6", "--threads", "2"}, extra...)
		out, errs := run(t, args...)
		var p float64
		if _, err := fmtSscanf(out, &p); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return p, errs
	}
	base, _ := ppl()
	cal, errs := ppl("--w8a8", "--w8a8-calibration", text, "--w8a8-calib-tokens", "512", "--w8a8-save-stats", stats)
	if !strings.Contains(errs, "w8a8: 35 weights converted (25 smoothed, alpha 0.5)") {
		t.Errorf("stderr lacks the conversion line:\n%s", errs)
	}
	again, _ := ppl("--w8a8", "--w8a8-calibration", stats)
	plain, _ := ppl("--w8a8")
	t.Logf("PPL float %.4f, w8a8 calibrated %.4f (from .json %.4f), w8a8 unsmoothed %.4f", base, cal, again, plain)
	if again != cal {
		t.Errorf("statistics from .json give PPL %v, from the text %v", again, cal)
	}
	for _, p := range []float64{cal, plain} {
		if p/base > 1.02 || p/base < 0.98 {
			t.Errorf("W8A8 PPL %v, float %v", p, base)
		}
	}
	if _, err := os.Stat(stats); err != nil {
		t.Error(err)
	}
	out, _ := run(t, "bench", "latency", "-m", model, "-p", "16", "-n", "4", "-r", "1", "--threads", "2", "--no-bandwidth", "--w8a8")
	if !strings.Contains(out, "W8A8") {
		t.Errorf("bench output does not name W8A8:\n%s", out)
	}
	for _, args := range [][]string{
		{"perplexity", "--model", model, "--file", text, "--w8a8-calibration", text},
		{"perplexity", "--model", model, "--file", text, "--w8a8", "--w8a8-alpha", "1.5"},
	} {
		if code := runMain(args, &strings.Builder{}, &strings.Builder{}); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
