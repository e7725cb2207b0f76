package regress

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestHistoryRoundTrip appends two runs to a history file, reads them back and prints them.
func TestHistoryRoundTrip(t *testing.T) {
	res := &Result{BaseCommit: "a326e49aaaabbbbccccddddeeeeffff00001111", HeadCommit: "b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0+dirty",
		Suites: []string{"kernels", "throughput"}, Rounds: 10, Threshold: 0.05, Confidence: 0.95, LoadBefore: "1.00 0.50 0.25", LoadAfter: "1.50 0.60 0.30", Seconds: 12.345,
		Comparisons: []Comparison{
			{Name: "matmul/q4_0 gemv 1024x2048", Unit: "ns/op", BaseMedian: 90288.4, HeadMedian: 99381.2, Ratio: 1.07912345, Lo: 1.0221, Hi: 1.1559, Verdict: "regression"},
			{Name: "throughput/total", Unit: "tok/s", HigherIsBetter: true, BaseMedian: 2000, HeadMedian: 2100, Ratio: 0.95238, Lo: 0.93, Hi: 0.97, Verdict: "~"},
		}, Regressions: 1}
	host := HostInfo()
	if host.CPUs < 1 || host.GOARCH == "" {
		t.Fatalf("host %+v", host)
	}
	path := filepath.Join(t.TempDir(), "sub", "history.jsonl")
	day := time.Date(2026, 12, 3, 5, 30, 0, 0, time.UTC)
	e1 := res.History(day, host)
	res.Regressions, res.Comparisons[0].Verdict = 0, "~"
	e2 := res.History(day.Add(time.Hour), host)
	for _, e := range []HistoryEntry{e1, e2} {
		if err := AppendHistory(path, e); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 || !strings.Contains(string(b), `"loadavg":"1.00 0.50 0.25 -> 1.50 0.60 0.30"`) {
		t.Fatalf("%d lines, want 2:\n%s", n, b)
	}
	f, _ := os.Open(path)
	defer f.Close()
	got, err := ReadHistory(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []HistoryEntry{e1, e2}) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, []HistoryEntry{e1, e2})
	}
	if e1.Verdict != "1 regression(s)" || e2.Verdict != "no regression" || e1.Benchmarks[0].Ratio != 1.079 || e1.Load != "1.00 0.50 0.25 -> 1.50 0.60 0.30" {
		t.Errorf("entry %+v", e1)
	}
	var sb strings.Builder
	PrintHistory(&sb, got)
	out := sb.String()
	for _, want := range []string{"a326e49aaa", "b1c2d3e4f5+dirty", "2026-12-03 05:30", "1 regression(s)", "1.079!", "0.952", "throughput/total"} {
		if !strings.Contains(out, want) {
			t.Errorf("history table lacks %q:\n%s", want, out)
		}
	}
}

func TestReadHistoryBadLines(t *testing.T) {
	for in, want := range map[string]string{
		"\n{\"date\": \"2026-12-03T05:30:00Z\"\n":            "history line 2",
		`{"date": "2026-12-03T05:30:00Z", "benchmarks": []}`: "history line 1: not a bench regress entry",
		`{"benchmarks": [{"name": "x"}]}`:                    "history line 1: not a bench regress entry",
	} {
		if _, err := ReadHistory(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}
