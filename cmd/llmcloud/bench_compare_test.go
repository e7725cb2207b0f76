package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/bench"
)

func writeResult(t *testing.T, dir, label string, thr, ttft float64) string {
	t.Helper()
	r := &bench.Result{Label: label, Completed: 10, RequestThroughput: thr, RequestRate: 4,
		TTFTs: []float64{ttft / 1000, 2 * ttft / 1000}, TPOTs: []float64{0.01, 0.012}, E2ELs: []float64{0.2, 0.3},
		ITLs: [][]float64{{0.01, 0.011}, {0.012}}, Errors: []string{"", ""},
		Stats: map[string]float64{"mean_ttft_ms": ttft, "p99_ttft_ms": 2 * ttft}}
	p, err := r.Save(dir, label+".json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBenchCompare(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, dir, "a", 10, 50)
	b := writeResult(t, dir, "b", 15, 40)
	var out bytes.Buffer
	if err := runBenchCompare([]string{a, b}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"| metric", " a |", " b |", "15.00 (x1.50)", "40.00 (x0.80)", "| completed"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
	if err := runBenchCompare([]string{filepath.Join(dir, "missing.json")}, &out, &out); err == nil {
		t.Error("want an error for a missing file")
	}
}
