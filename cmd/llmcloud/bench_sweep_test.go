package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench/benchtest"
)

func TestBenchSweep(t *testing.T) {
	srv := benchtest.New(benchtest.Script{TTFT: time.Millisecond, ITL: time.Millisecond}, false)
	defer srv.Close()
	dir := t.TempDir()
	var out bytes.Buffer
	err := runBenchSweep([]string{"--base-url", srv.URL, "--num-prompts", "6", "--random-input-len", "8",
		"--random-output-len", "4", "--max-concurrency-list", "1,3", "--request-rates", "100,inf",
		"--result-dir", dir, "--label", "sw", "--disable-tqdm"}, &out, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "sw-sweep-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pts []sweepPoint
	if err := json.Unmarshal(b, &pts); err != nil || len(pts) != 4 {
		t.Fatalf("%d points %v", len(pts), err)
	}
	for _, p := range pts {
		if p.Metrics["completed"] != 6 {
			t.Errorf("point %+v", p)
		}
		if _, err := os.Stat(filepath.Join(dir, p.File)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(out.String(), "rate inf conc 3") {
		t.Errorf("no comparison table:\n%s", out.String())
	}
}
