package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/regress"
)

// TestBenchRegressFlags checks that bad flags exit 2 with a message naming the flag.
func TestBenchRegressFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "regress"}, "--base and --head"},
		{[]string{"bench", "regress", "--base", "a", "--head", "b", "--threshold", "ten"}, "--threshold"},
		{[]string{"bench", "regress", "--base", "a", "--head", "b", "--threshold", "150%"}, "--threshold"},
		{[]string{"bench", "regress", "--base", "a", "--head", "b", "--suite", "serve"}, "--suite"},
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
