package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/regress"
)

// TestBenchRegressFlags checks that bad flags exit 2 with a message naming the flag.
func TestBenchRegressFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "regress"}, "--base BINARY or --base-commit REV"},
		{[]string{"bench", "regress", "--base", "a", "--base-commit", "main"}, "give one baseline"},
		{[]string{"bench", "regress", "--base", "a", "--suite", "kernels,bogus"}, `unknown suite "bogus"`},
		{[]string{"bench", "regress", "--base", "a", "--rounds", "0"}, "--rounds"},
		{[]string{"bench", "regress", "--base", "a", "--head", "b", "--threshold", "ten"}, "--threshold"},
		{[]string{"bench", "regress", "--base", "a", "--head", "b", "--threshold", "150%"}, "--threshold"},
		{[]string{"bench", "regress", "--base", "a", "--head", "b", "--suite", "gpu"}, `--suite: unknown suite "gpu"`},
		{[]string{"bench", "regress", "--base", "a", "--head", "b", "--confidence", "1"}, "--confidence"},
		{[]string{"bench", "kernels", "--ops", "0"}, "--ops"},
		{[]string{"bench", "kernels", "--filter", "("}, "--filter"},
	} {
		var errb strings.Builder
		if code := runMain(c.args, &strings.Builder{}, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
	var errb strings.Builder
	if code := runMain([]string{"bench", "regress", "--base", "/nonexistent/a", "--head", "/nonexistent/b"}, &strings.Builder{}, &errb); code != 1 || !strings.Contains(errb.String(), "/nonexistent/a") {
		t.Errorf("missing binary: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := runMain([]string{"bench", "regress", "--base-commit", "no-such-rev-xyz", "--repo", t.TempDir()}, &strings.Builder{}, &errb); code != 1 || !strings.Contains(errb.String(), "not in a git repository") {
		t.Errorf("--base-commit outside a repository: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if exec.Command("git", "rev-parse", "--git-dir").Run() != nil {
		t.Log("not in a git checkout: the missing-revision case is left out")
	} else if code := runMain([]string{"bench", "regress", "--base-commit", "no-such-rev-xyz", "--quiet"}, &strings.Builder{}, &errb); code != 1 || !strings.Contains(errb.String(), `no commit "no-such-rev-xyz"`) {
		t.Errorf("--base-commit with a missing revision: exit %d, stderr %q", code, errb.String())
	}
	for s, want := range map[string]float64{"5%": 0.05, "0.1": 0.1, "0": 0} {
		if got, err := parseFraction(s); err != nil || got != want {
			t.Errorf("parseFraction(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
}

// TestBenchKernelsJSON runs one round of two benchmarks of the suite and reads its JSON back.
func TestBenchKernelsJSON(t *testing.T) {
	var out strings.Builder
	if err := runBenchKernels([]string{"--json", "--ops", "5", "--filter", "rmsnorm|q8_0 gemv"}, &out, &strings.Builder{}); err != nil {
		t.Fatal(err)
	}
	var r regress.SuiteResult
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(r.Benchmarks) != 2 || r.Benchmarks[0].Kernel != "matmul/q8_0" || r.Benchmarks[1].Kernel != "rmsnorm" || r.Injected != "" {
		t.Fatalf("suite result %+v", r)
	}
	for _, b := range r.Benchmarks {
		if !(b.NsPerOp > 0) || b.Ops != 5 {
			t.Errorf("%s: %g ns/op over %d ops, want > 0 over 5", b.Name, b.NsPerOp, b.Ops)
		}
	}
}

// TestBenchRegressShowHistory appends a run to a history file and prints it with
// --show-history; a damaged file is an error naming the line.
func TestBenchRegressShowHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	res := &regress.Result{BaseCommit: "1111111111aaaa", HeadCommit: "2222222222bbbb", Suites: []string{"latency"}, Rounds: 10,
		Comparisons: []regress.Comparison{{Name: "latency/decode per token", Unit: "ms", Ratio: 1.234, Lo: 1.1, Hi: 1.3, Verdict: "regression"}}, Regressions: 1}
	if err := regress.AppendHistory(path, res.History(time.Now(), regress.HostInfo())); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := runMain([]string{"bench", "regress", "--show-history", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"1111111111", "2222222222", "latency/decode per token", "1.234!", "1 regression(s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--show-history output lacks %q:\n%s", want, out.String())
		}
	}
	if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := runMain([]string{"bench", "regress", "--show-history", path}, &strings.Builder{}, &errb); code != 1 || !strings.Contains(errb.String(), "history line 1") {
		t.Errorf("bad history: exit %d, stderr %q", code, errb.String())
	}
}

// TestBenchRegressEngineSuitesParse runs one small round of bench latency and bench
// throughput in this process, as the latency and throughput suites do, and reads their output
// with the suites' parsers (a change of either command's output breaks this test, not the
// nightly comparison).
func TestBenchRegressEngineSuitesParse(t *testing.T) {
	var out strings.Builder
	if err := runBenchLatency([]string{"-p", "16", "-n", "4", "-r", "1", "--threads", "1", "--no-bandwidth"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lat, err := regress.LatencySuite(1).Parse([]byte(out.String()))
	if err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(lat.Benchmarks) != 2 || lat.Benchmarks[0].Name != "latency/prefill 16 tokens" || !(lat.Benchmarks[1].Value > 0) {
		t.Errorf("latency suite read %+v", lat.Benchmarks)
	}
	file := filepath.Join(t.TempDir(), "tp.json")
	if err := runBenchThroughput([]string{"--num-prompts", "4", "--input-len", "8", "--output-len", "8", "--threads", "1", "--output-json", file}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := regress.ThroughputSuite(1).Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.Benchmarks) == 0 || !tp.Benchmarks[0].HigherIsBetter || !(tp.Benchmarks[0].Value > 0) {
		t.Errorf("throughput suite read %+v", tp.Benchmarks)
	}
}

// TestBenchRegressReportOnly runs the command on two shell scripts that print a kernel
// suite's JSON, the head's figure twice the base's: a regression exits 1, with --report-only
// 0, and --history records the run either way.
func TestBenchRegressReportOnly(t *testing.T) {
	dir := t.TempDir()
	script := func(name string, ns int) string {
		p := filepath.Join(dir, name)
		body := "#!/bin/sh\necho '{\"suite\":\"kernels\",\"benchmarks\":[{\"name\":\"k\",\"kernel\":\"k\",\"ns_per_op\":" + strconv.Itoa(ns) + "}]}'\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base, head := script("base", 100), script("head", 200)
	hist := filepath.Join(dir, "h.jsonl")
	args := []string{"bench", "regress", "--base", base, "--head", head, "--rounds", "10", "--quiet", "--history", hist}
	var out, errb strings.Builder
	if code := runMain(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "1 benchmark(s) regressed") {
		t.Errorf("a 2x slowdown: exit %d, stderr %q; want 1", code, errb.String())
	}
	out.Reset()
	if code := runMain(append(args, "--report-only"), &out, &errb); code != 0 || !strings.Contains(out.String(), "regression") {
		t.Errorf("--report-only: exit %d, stdout %q; want 0 and the regression shown", code, out.String())
	}
	f, err := os.Open(hist)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := regress.ReadHistory(f)
	if err != nil || len(h) != 2 || h[1].Benchmarks[0].Ratio != 2 || h[1].Verdict != "1 regression(s)" {
		t.Errorf("history %+v, %v; want 2 runs with ratio 2", h, err)
	}
}
