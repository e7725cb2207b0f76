package main

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/sim"
)

// TestSimulateSearchMargin: `simulate --search --slo 'ttft_p99<1s'` prints the plan — the
// fewest replicas whose simulated p99 TTFT is under 1 s at the rate — with its margin, and
// what one replica fewer gives; the printed figures must agree with the probes it printed.
// The profile is fixed (the built-in model's coefficients measured on this host, in
// docs/simulate.md), so the plan does not depend on the machine's speed.
func TestSimulateSearchMargin(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.MaxModelLenTokens = 512
	p := &sim.Profile{Version: sim.ProfileVersion, CPU: sim.ThisCPU(), Threads: 2, Engine: sim.FromEngine(cfg)}
	p.SetCoefficients(sim.Coefficients{3.382e-4, 1.679e-4, 2.307e-7, 2.222e-4, 1.018e-6})
	prof := filepath.Join(t.TempDir(), "prof.json")
	if err := p.Save(prof); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runCmd(t, "simulate", "--profile", prof, "--search", "--slo", "ttft_p99<1s", "--request-rate", "60",
		"--random-input-len", "256", "--random-output-len", "64", "--num-prompts", "3000")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	t.Log(out)
	probes := map[int]float64{}
	misses := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)^ +(\d+) replicas: p99_ttft_ms = ([0-9.]+) ms, (\d+) failed -> (meets|misses)`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		probes[n], _ = strconv.ParseFloat(m[2], 64)
		misses[n] = m[4] == "misses"
	}
	plan := regexp.MustCompile(`(?m)^Plan: (\d+) replicas for ttft_p99<1s at 60 requests/s: predicted ([0-9.]+) ms, margin ([0-9.]+)% under the target$`).FindStringSubmatch(out)
	if plan == nil {
		t.Fatalf("no plan line:\n%s", out)
	}
	n, _ := strconv.Atoi(plan[1])
	pred, _ := strconv.ParseFloat(plan[2], 64)
	margin, _ := strconv.ParseFloat(plan[3], 64)
	if v, ok := probes[n]; !ok || v != pred || misses[n] || pred >= 1000 {
		t.Errorf("plan of %d replicas predicts %.1f ms; its probe: %.1f ms (printed %v, misses %v)", n, pred, v, ok, misses[n])
	}
	if want := 100 * (1000 - pred) / 1000; math.Abs(margin-want) > 0.06 {
		t.Errorf("margin %.1f%%, want %.1f%% for %.1f ms against 1000 ms", margin, want, pred)
	}
	if n < 2 {
		t.Fatalf("the plan is %d replica(s): the rate is meant to need several", n)
	}
	fewer := regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d replicas: predicted ([0-9.]+) ms \(([0-9.]+)%% over the target\), (\d+) failed$`, n-1)).FindStringSubmatch(out)
	if fewer == nil {
		t.Fatalf("no line for %d replicas:\n%s", n-1, out)
	}
	v, _ := strconv.ParseFloat(fewer[1], 64)
	over, _ := strconv.ParseFloat(fewer[2], 64)
	if !misses[n-1] || v != probes[n-1] || v < 1000 {
		t.Errorf("%d replicas: %.1f ms printed, probe %.1f ms (misses %v): one replica fewer must miss the target", n-1, v, probes[n-1], misses[n-1])
	}
	if want := 100 * (v - 1000) / 1000; math.Abs(over-want) > 0.06 {
		t.Errorf("%d replicas: %.1f%% over, want %.1f%%", n-1, over, want)
	}
}
