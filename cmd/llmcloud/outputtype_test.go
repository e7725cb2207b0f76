package main

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

// `--output-tensor-type q8_0` quantizes stories260K's output matrix at load (said on stderr),
// greedy generation still runs, bench latency takes it too, and a type it does not take is a usage error.
func TestOutputTensorTypeFlag(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	out, errs := run(t, "generate", "--model", model, "--prompt", "Once", "--max-tokens", "8", "--temperature", "0",
		"--threads", "2", "--output-tensor-type", "q8_0")
	if !strings.Contains(errs, "output-tensor-type: output.weight quantized to q8_0 at load") || strings.TrimSpace(out) == "" {
		t.Fatalf("stdout %q, stderr:\n%s", out, errs)
	}
	if _, errs := run(t, "bench", "latency", "-m", model, "-p", "8", "-n", "4", "-r", "1", "--threads", "2", "--no-bandwidth",
		"--output-tensor-type", "q8_0"); !strings.Contains(errs, "output.weight quantized to q8_0") {
		t.Errorf("bench latency stderr:\n%s", errs)
	}
	args := []string{"generate", "--model", model, "--prompt", "Once", "--output-tensor-type", "q4_0"}
	if code := runMain(args, &strings.Builder{}, &strings.Builder{}); code != 2 {
		t.Errorf("%v: exit %d, want 2", args, code)
	}
}
