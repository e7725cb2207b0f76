package main

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestBenchLatency(t *testing.T) {
	m := fixture.Path(t, "models", "rand3M", "rand3M-q8_0.gguf")
	out, _ := run(t, "bench", "latency", "-m", m, "-p", "16", "-n", "4", "--threads", "2", "-r", "2", "--no-bandwidth")
	for _, want := range []string{"| model | size | params | backend | threads | test | t/s |", "| llama 3M Q8_0", "pp16", "tg4", " ± ", "decode reads 3.19 MiB", "decode step times (8 steps): min ", "steps with all 2 threads on a CPU"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchLatencyProbes: with the bandwidth measured, the tg test probes it between its steps
// and prints the decode's share of it window by window.
func TestBenchLatencyProbes(t *testing.T) {
	m := fixture.Path(t, "models", "rand3M", "rand3M-q8_0.gguf")
	out, _ := run(t, "bench", "latency", "-m", m, "-p", "0", "-n", "8", "--threads", "2", "-r", "1", "--probe-every", "3")
	for _, want := range []string{"of the measured read bandwidth", "bandwidth probed before and after the tests",
		"of the bandwidth probed between its steps (the median of 3 windows of up to 3 steps", "; 4 probes of 256 MiB", "a thread: min "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{{"bench"}, {"bench", "nope"}, {"bench", "latency", "extra"}, {"bench", "latency", "-m", "x", "-p", "0", "-n", "0"},
		{"bench", "latency", "-m", "x", "--probe-every", "-1"}} {
		if code := runMain(args, &strings.Builder{}, &strings.Builder{}); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
