package regress

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// build links testdata/kbench (the kernel suite behind a `bench kernels --json` command line)
// with the given -X injected slowdown ("" for none).
func build(t *testing.T, dir, name, inject string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	args := []string{"build", "-o", bin}
	if inject != "" {
		args = append(args, "-ldflags", "-X github.com/llmcloud/llmcloud/kernels.injectSlowdown="+inject)
	}
	cmd := exec.Command("go", append(args, "./testdata/kbench")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestRegressDetectsInjectedSlowdown builds three binaries of the same source, one of them
// linked with matmul/q4_0 made 10% slower, and checks that the check flags that kernel's
// benchmark (and nothing else) against it and flags nothing between the two plain builds.
// The two plain builds are compared LLMCLOUD_REGRESS_REPEAT times (default 1; the acceptance
// measurement runs 10: docs/bench-regress.md).
func TestRegressDetectsInjectedSlowdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries")
	}
	dir := t.TempDir()
	t0 := time.Now()
	a := build(t, dir, "a", "")
	b := build(t, dir, "b", "")
	slow := build(t, dir, "slow", "matmul/q4_0=0.10")
	t.Logf("built 3 binaries in %.1fs; load average %s", time.Since(t0).Seconds(), loadavg())
	cfg := Config{
		Suites:     []Suite{KernelSuite(SuiteOptions{Threads: 1, Ops: 100, Filter: "q4_0 gemv|rmsnorm|softmax"})},
		Rounds:     80,
		Threshold:  0.05,
		Confidence: 0.95,
	}

	cfg.Base, cfg.Head = a, slow
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	logResult(t, res)
	if res.HeadInject != "matmul/q4_0=0.10" || res.BaseInject != "" {
		t.Errorf("injected slowdowns read back as base %q, head %q", res.BaseInject, res.HeadInject)
	}
	flagged := false
	for _, c := range res.Comparisons {
		if c.Verdict == "regression" {
			if c.Kernel != "matmul/q4_0" {
				t.Errorf("%s flagged (ratio %.3f [%.3f, %.3f]): only matmul/q4_0 was slowed", c.Name, c.Ratio, c.Lo, c.Hi)
			}
			flagged = true
		}
	}
	if !flagged || res.Regressions == 0 {
		t.Errorf("the 10%% slowdown of matmul/q4_0 was not flagged")
	}

	repeat := 1
	if s := os.Getenv("LLMCLOUD_REGRESS_REPEAT"); s != "" {
		if repeat, err = strconv.Atoi(s); err != nil || repeat < 1 {
			t.Fatalf("LLMCLOUD_REGRESS_REPEAT=%q: want a positive count", s)
		}
	}
	cfg.Base, cfg.Head = a, b
	for i := range repeat {
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		logResult(t, res)
		if res.Regressions != 0 {
			t.Errorf("run %d of %d: %d regression(s) between two builds of the same source", i+1, repeat, res.Regressions)
		}
	}
}

func logResult(t *testing.T, r *Result) {
	var sb strings.Builder
	r.Print(&sb)
	t.Log("\n" + sb.String())
}

// TestRunBadBinary checks the errors for a missing binary and one that prints no suite JSON.
func TestRunBadBinary(t *testing.T) {
	cfg := Config{Base: "/nonexistent/llmcloud", Head: "/bin/true", Suites: []Suite{{Name: "kernels"}}, Rounds: 1, Threshold: 0.05, Confidence: 0.95}
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "/nonexistent/llmcloud") {
		t.Fatalf("missing binary: error %v, want one naming it", err)
	}
	cfg.Base = "/bin/true"
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no suite JSON") {
		t.Fatalf("silent binary: error %v, want \"no suite JSON\"", err)
	}
	cfg.Base, cfg.Head = "/bin/echo", "/bin/echo"
	cfg.Suites = []Suite{{Name: "kernels", Args: []string{`{"suite":"kernels","benchmarks":[]}`}}}
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "ran no benchmark") {
		t.Fatalf("empty suite: error %v", err)
	}
}
