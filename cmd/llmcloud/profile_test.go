// Tests of the profile command through runMain: the tables of stories260K name the model's
// ops, the trace file is well-formed trace-event JSON, and on a larger random model the ops'
// self times account for the prefill step's time to within 5%.
package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/profile"
)

var coverageLine = regexp.MustCompile(`(?m)^(prefill|decode): ops' self time ([0-9.]+) ms of measured step time ([0-9.]+) ms = ([0-9.]+)%`)

// coverages returns each phase's percentage of the step time the ops account for.
func coverages(t *testing.T, out string) map[string]float64 {
	t.Helper()
	cov := map[string]float64{}
	for _, m := range coverageLine.FindAllStringSubmatch(out, -1) {
		f, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Fatal(err)
		}
		cov[m[1]] = f
	}
	return cov
}

func TestProfileCommand(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.json")
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	out, errs, code := runCmd(t, "profile", model, "-p", "16", "-n", "4", "--threads", "2", "--trace", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	for _, s := range []string{"prefill: 1 step(s) of 16 token(s)", "decode: 4 step(s) of 1 token(s)", "GFLOP/s",
		"matmul_multi", "attention", "add_rms_norm", "swiglu", "embedding"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	// Decode: 4 steps, 5 layers: the attention row has 20 calls.
	if !regexp.MustCompile(`(?m)^\s+attention\s+20\s`).MatchString(out) {
		t.Errorf("no attention row of 20 calls in decode:\n%s", out)
	}
	cov := coverages(t, out)
	if len(cov) != 2 || cov["prefill"] <= 0 || cov["prefill"] > 105 || cov["decode"] <= 0 || cov["decode"] > 105 {
		t.Errorf("coverage %v:\n%s", cov, out)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	n, err := profile.Validate(data)
	if err != nil {
		t.Fatal(err)
	}
	if n < 5*20 {
		t.Errorf("%d slices in the trace", n)
	}
	for _, s := range []string{`"worker 0 (caller)"`, `"worker 1"`, `"steps"`, `"prefill"`, `"decode"`} {
		if !strings.Contains(string(data), s) {
			t.Errorf("trace lacks %s", s)
		}
	}

	if _, _, code := runCmd(t, "profile", model, "-p", "0"); code == 0 {
		t.Error("-p 0 accepted")
	}
}

// TestProfileCoverage: on a model whose ops take milliseconds (a stories15M-shaped random
// model, 192 prompt tokens: since prefill runs on AMX tiles, 64 tokens take ~4 ms and the
// executor's fixed time between ops came close to the 5%), the ops' self times add up to the
// measured prefill step time within 5%.
// TestProfileKVDType: --kv-cache-dtype profiles attention over a quantized cache (the header
// names it), and a type that does not exist is a usage error.
func TestProfileKVDType(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	out, errs, code := runCmd(t, "profile", model, "-p", "8", "-n", "2", "--threads", "2", "--kv-cache-dtype", "q8_0")
	if code != 0 || !strings.Contains(out, "KV q8_0;") || !regexp.MustCompile(`(?m)^\s+attention\s+10\s`).MatchString(out) {
		t.Fatalf("exit %d, no q8_0 header or decode attention row:\n%s %s", code, out, errs)
	}
	if _, errs, code := runCmd(t, "profile", model, "--kv-cache-dtype", "int3"); code == 0 || !strings.Contains(errs, "--kv-cache-dtype") {
		t.Fatalf("--kv-cache-dtype int3: exit %d, %s", code, errs)
	}
}

func TestProfileCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and runs a 15M-parameter model")
	}
	gg := filepath.Join(t.TempDir(), "s.gguf")
	if out, errs, code := runCmd(t, "synth", "--preset", "stories15m", "--vocab", "512", "--type", "q8_0", "-o", gg); code != 0 {
		t.Fatalf("synth: exit %d: %s %s", code, out, errs)
	}
	out, errs, code := runCmd(t, "profile", gg, "-p", "192", "-n", "4", "--threads", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	t.Logf("\n%s", out)
	cov := coverages(t, out)
	if c := cov["prefill"]; c < 95 || c > 105 {
		t.Errorf("prefill: ops' self time is %.1f%% of the step time, want within 5%%", c)
	}
}
