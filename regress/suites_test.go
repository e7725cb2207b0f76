package regress

import (
	"os"
	"strings"
	"testing"
)

func TestSuitesFlags(t *testing.T) {
	s, err := Suites("throughput, kernels", SuiteOptions{Threads: 2, Ops: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || s[0].Name != "kernels" || s[1].Name != "throughput" {
		t.Fatalf("suites %+v: want kernels then throughput", s)
	}
	if got := strings.Join(s[0].Args, " "); got != "bench kernels --json --threads 2 --ops 7" {
		t.Errorf("kernel suite args %q", got)
	}
	if s[1].OutputFlag != "--output-json" || !strings.Contains(strings.Join(s[1].Args, " "), "--threads 2") {
		t.Errorf("throughput suite %+v", s[1])
	}
	for list, want := range map[string]string{
		"kernels,gpu":     `unknown suite "gpu"`,
		"latency,latency": `suite "latency" given twice`,
		"":                `unknown suite ""`,
	} {
		if _, err := Suites(list, SuiteOptions{Threads: 1}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Suites(%q): error %v, want %q", list, err, want)
		}
	}
}

// TestParseLatencyTable reads a table `bench latency` printed (testdata/latency-table.txt: the
// stdout of `llmcloud bench latency -p 512 -n 128 -r 5 --threads 1 --no-bandwidth` on the
// built-in default model, this branch, 3 Dec 2026) and checks the conversion of tokens/s into
// latencies.
func TestParseLatencyTable(t *testing.T) {
	b, err := os.ReadFile("testdata/latency-table.txt")
	if err != nil {
		t.Fatal(err)
	}
	r, err := LatencySuite(1).Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Benchmarks) != 2 {
		t.Fatalf("benchmarks %+v, want prefill and decode", r.Benchmarks)
	}
	pp, tg := r.Benchmarks[0], r.Benchmarks[1]
	// The file's rows: pp512 at 7123.72 t/s, tg128 at 3188.38 t/s.
	if pp.Name != "latency/prefill 512 tokens" || pp.Unit != "ms" || pp.HigherIsBetter || !near(pp.Value, 512e3/7123.72) {
		t.Errorf("prefill %+v, want %g ms", pp, 512e3/7123.72)
	}
	if tg.Name != "latency/decode per token" || tg.Unit != "ms" || !near(tg.Value, 1e3/3188.38) {
		t.Errorf("decode %+v, want %g ms", tg, 1e3/3188.38)
	}
	if _, err := LatencySuite(1).Parse([]byte("no table here\n")); err == nil {
		t.Error("a text with no table parsed")
	}
	bad := "| m | 1 MiB | 1M | CPU | 1 | pp128 | fast |\n"
	if _, err := LatencySuite(1).Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "pp128") {
		t.Errorf("bad row: error %v, want one quoting the row", err)
	}
}

func TestParseThroughputJSON(t *testing.T) {
	r, err := ThroughputSuite(1).Parse([]byte(`{"tokens_per_second": 2000.5, "decode_tokens_per_second": 900, "elapsed_time": 1.2}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Benchmarks) != 2 || r.Benchmarks[0].Value != 2000.5 || !r.Benchmarks[0].HigherIsBetter || r.Benchmarks[1].Value != 900 {
		t.Fatalf("benchmarks %+v", r.Benchmarks)
	}
	for _, s := range []string{`{"tokens_per_second": 0}`, `not json`} {
		if _, err := ThroughputSuite(1).Parse([]byte(s)); err == nil {
			t.Errorf("%s parsed", s)
		}
	}
}

// TestDirection checks that a slower head is a regression whichever way its figure points: a
// latency that went up and a throughput that went down both give a time ratio above 1.
func TestDirection(t *testing.T) {
	const rounds = 12
	var base, head []*SuiteResult
	for r := range rounds {
		jitter := 1 + 0.01*float64(r%3-1) // -1%, 0, +1%, the same for base and head's round
		base = append(base, &SuiteResult{Benchmarks: []Benchmark{
			{Name: "lat", Unit: "ms", Value: 10 * jitter},
			{Name: "tps", Unit: "tok/s", Value: 1000 / jitter, HigherIsBetter: true},
			{Name: "tps fast", Unit: "tok/s", Value: 1000 / jitter, HigherIsBetter: true},
			{Name: "kernel", NsPerOp: 500 * jitter},
		}})
		wobble := 1 + 0.002*float64(r%4)
		head = append(head, &SuiteResult{Benchmarks: []Benchmark{
			{Name: "lat", Unit: "ms", Value: 12 * jitter * wobble},                                 // 20% slower
			{Name: "tps", Unit: "tok/s", Value: 800 / jitter / wobble, HigherIsBetter: true},       // 25% slower in time
			{Name: "tps fast", Unit: "tok/s", Value: 1250 / jitter * wobble, HigherIsBetter: true}, // 20% faster in time
			{Name: "kernel", NsPerOp: 500 * jitter * wobble},                                       // the same
		}})
	}
	cmp, err := compare(base, head, Config{Rounds: rounds, Threshold: 0.05, Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		ratio   float64
		verdict string
	}{"lat": {1.2, "regression"}, "tps": {1.25, "regression"}, "tps fast": {0.8, "faster"}, "kernel": {1, "~"}}
	for _, c := range cmp {
		w := want[c.Name]
		if c.Verdict != w.verdict || c.Ratio < w.ratio*0.99 || c.Ratio > w.ratio*1.01 {
			t.Errorf("%s: ratio %.3f [%.3f, %.3f] %s; want about %.2f, %s", c.Name, c.Ratio, c.Lo, c.Hi, c.Verdict, w.ratio, w.verdict)
		}
	}
	if cmp[1].Unit != "tok/s" || !cmp[1].HigherIsBetter || cmp[3].Unit != "ns/op" || cmp[1].BaseMedian < 990 || cmp[1].BaseMedian > 1010 {
		t.Errorf("units and medians %+v", cmp)
	}
	// A binary whose figure changed direction is an error, not a silent inversion.
	head[3].Benchmarks[1].HigherIsBetter = false
	if _, err := compare(base, head, Config{Rounds: rounds, Threshold: 0.05, Confidence: 0.95}); err == nil || !strings.Contains(err.Error(), "round 4: tps") {
		t.Errorf("direction mismatch: error %v", err)
	}
}

func near(a, b float64) bool { return a > b*0.9999 && a < b*1.0001 }

// TestParseServeJSON reads a result `bench serve` saved (testdata/serve-result.json:
// `llmcloud bench serve --num-prompts 4 --random-input-len 16 --random-output-len 8
// --ignore-eos --seed 1 --save-result` against `llmcloud serve --threads 1` on the built-in
// default model, this branch, 3 Dec 2026).
func TestParseServeJSON(t *testing.T) {
	b, err := os.ReadFile("testdata/serve-result.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ServeSuite(1).Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Benchmarks) != 3 || !near(r.Benchmarks[0].Value, 1263.1422051810305) || !r.Benchmarks[0].HigherIsBetter ||
		!near(r.Benchmarks[1].Value, 15.518702) || r.Benchmarks[1].HigherIsBetter || !near(r.Benchmarks[2].Value, 1.2944044285714282) {
		t.Errorf("serve suite read %+v", r.Benchmarks)
	}
	if _, err := ServeSuite(1).Parse([]byte(`{"completed": 3, "failed": 1, "output_throughput": 10, "median_ttft_ms": 1, "median_tpot_ms": 1}`)); err == nil || !strings.Contains(err.Error(), "1 failed") {
		t.Errorf("a failed request: error %v", err)
	}
}

// TestStartServerExits checks that a server that exits before answering is an error naming it,
// not a 60 s wait.
func TestStartServerExits(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := startServer(t.Context(), "/bin/false", []string{"serve"}, port); err == nil || !strings.Contains(err.Error(), "exited before serving") {
		t.Errorf("error %v", err)
	}
	if got := expand([]string{"--port", "{port}", "--result-dir", "{tmp}/x"}, 8123, "/t"); strings.Join(got, " ") != "--port 8123 --result-dir /t/x" {
		t.Errorf("expand: %q", got)
	}
}
