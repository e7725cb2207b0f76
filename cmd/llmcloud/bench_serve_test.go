package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench"
	"github.com/llmcloud/llmcloud/bench/benchtest"
)

func TestBenchServe(t *testing.T) {
	srv := benchtest.New(benchtest.Script{TTFT: 2 * time.Millisecond, ITL: time.Millisecond}, false)
	defer srv.Close()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	err := runBenchServe([]string{"--base-url", srv.URL, "--num-prompts", "12", "--random-input-len", "16",
		"--random-output-len", "6", "--max-concurrency", "3", "--request-rate", "200", "--goodput", "ttft:1000", "tpot:500",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json", "--label", "t", "--metric-percentiles", "50,99"}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	for _, w := range []string{"Serving Benchmark Result", "Successful requests:                     12",
		"Request goodput (req/s):", "P50 TPOT (ms):", "Maximum request concurrency:             3"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	r, err := bench.LoadResult(dir + "/r.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 12 || r.ModelID != "scripted" || r.TotalOutputTokens != 72 || r.Goodput["tpot"] != 500 ||
		*r.RequestGoodput != r.RequestThroughput || len(r.ITLs) != 12 || r.Stats["p50_itl_ms"] == 0 {
		t.Errorf("result %+v", r)
	}
	if err := runBenchServe([]string{"--base-url", srv.URL, "stray"}, &out, &errb); err == nil {
		t.Error("want a usage error for a stray argument")
	}
}

// TestBenchServeInterrupt: Ctrl-C (a cancelled context) ends the run early and the result is
// still printed and saved, marked interrupted.
func TestBenchServeInterrupt(t *testing.T) {
	srv := benchtest.New(benchtest.Script{TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond, Tokens: 50}, false)
	defer srv.Close()
	dir := t.TempDir()
	fs := newFlags("bench serve", &bytes.Buffer{})
	f := addServeFlags(fs)
	if err := fs.Parse([]string{"--base-url", srv.URL, "--model", "m", "--num-prompts", "100", "--request-rate", "50",
		"--random-input-len", "8", "--save-result", "--result-dir", dir, "--disable-tqdm"}); err != nil {
		t.Fatal(err)
	}
	run, err := f.prepare(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	path, err := run.execute(ctx, f, &out, &bytes.Buffer{})
	if err != nil || path == "" {
		t.Fatalf("%q %v", path, err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("interrupted run took %v", el)
	}
	r, err := bench.LoadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Completed+r.Failed >= 100 || !strings.Contains(out.String(), "Serving Benchmark Result") {
		t.Errorf("interrupted %v completed %d failed %d", r.Interrupted, r.Completed, r.Failed)
	}
}
