package regress

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Suite is one benchmark suite as each binary runs it, once per round, in a fresh process.
type Suite struct {
	Name string
	Args []string // the command line after the binary
	// OutputFlag, when set, is a flag the command takes a file name with ("--output-json"):
	// Run appends it with a temporary file and Parse reads that file instead of stdout.
	OutputFlag string
	// Server, when set, is a command the same binary runs for the round before Args and that
	// is stopped after it (`serve`), ready once GET /health answers 200. In Server and Args
	// "{port}" is a free local port and "{tmp}" a temporary directory.
	Server []string
	// ResultFile, when set, is a file in {tmp} the command writes and Parse reads.
	ResultFile string
	// Parse turns the round's output into benchmarks; nil reads a SuiteResult as JSON.
	Parse func(out []byte) (*SuiteResult, error)
}

// SuiteOptions are the settings the suites share.
type SuiteOptions struct {
	Threads int    // compute threads of every suite
	Ops     int    // kernel suite: ops timed one by one per benchmark
	Filter  string // kernel suite: a regular expression of benchmark names, or ""
}

// SuiteNames are the suites Suites knows, in the order they run within a round.
var SuiteNames = []string{"kernels", "latency", "throughput", "serve"}

// Suites returns the named suites ("kernels,latency"), in SuiteNames' order; an unknown or
// repeated name is an error that names it.
func Suites(list string, o SuiteOptions) ([]Suite, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		known := false
		for _, k := range SuiteNames {
			known = known || k == n
		}
		switch {
		case !known:
			return nil, fmt.Errorf("unknown suite %q (want a comma-separated list of %s)", n, strings.Join(SuiteNames, ", "))
		case want[n]:
			return nil, fmt.Errorf("suite %q given twice", n)
		}
		want[n] = true
	}
	if o.Threads < 1 {
		return nil, fmt.Errorf("threads %d must be at least 1", o.Threads)
	}
	var out []Suite
	for _, n := range SuiteNames {
		if !want[n] {
			continue
		}
		switch n {
		case "kernels":
			out = append(out, KernelSuite(o))
		case "latency":
			out = append(out, LatencySuite(o.Threads))
		case "throughput":
			out = append(out, ThroughputSuite(o.Threads))
		case "serve":
			out = append(out, ServeSuite(o.Threads))
		}
	}
	return out, nil
}

// KernelSuite is `bench kernels --json` (perf/kernelbench).
func KernelSuite(o SuiteOptions) Suite {
	args := []string{"bench", "kernels", "--json", "--threads", strconv.Itoa(o.Threads), "--ops", strconv.Itoa(max(o.Ops, 1))}
	if o.Filter != "" {
		args = append(args, "--filter", o.Filter)
	}
	return Suite{Name: "kernels", Args: args}
}

// The latency suite's fixed shapes: with the built-in default model one round takes under a
// second, and each test's timed part tens of milliseconds, the engine's work rather than the
// process start.
const (
	latencyPrompt = 512 // pp test: prompt tokens in one batch (bench latency's default, llama-bench's)
	latencyGen    = 128 // tg test: generated tokens (the same)
	latencyReps   = 5   // timed repetitions per round, after bench latency's warm-up (its default)
)

// LatencySuite is `bench latency` on the built-in default model: the prompt's prefill time and
// the time per decoded token, read from its llama-bench table (which every llmcloud since the
// command's first version prints, so an old baseline commit runs it too).
func LatencySuite(threads int) Suite {
	return Suite{
		Name: "latency",
		Args: []string{"bench", "latency", "-p", strconv.Itoa(latencyPrompt), "-n", strconv.Itoa(latencyGen),
			"-r", strconv.Itoa(latencyReps), "--threads", strconv.Itoa(threads), "--no-bandwidth"},
		Parse: parseLatencyTable,
	}
}

// parseLatencyTable reads bench latency's table rows `| model | ... | pp512 | 7123.72 ± 451.88 |`
// and turns the mean tokens/s of each test into a latency (higher is worse): the whole
// prompt's prefill in ms for ppN, ms per token for tgN.
func parseLatencyTable(out []byte) (*SuiteResult, error) {
	res := &SuiteResult{Suite: "latency"}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 9 { // "", 7 columns, ""
			continue
		}
		test := strings.TrimSpace(f[6])
		if len(test) < 3 || (test[:2] != "pp" && test[:2] != "tg") {
			continue
		}
		n, err := strconv.Atoi(strings.Fields(test[2:])[0])
		mean, _, _ := strings.Cut(strings.TrimSpace(f[7]), "±")
		tps, err2 := strconv.ParseFloat(strings.TrimSpace(mean), 64)
		if err != nil || err2 != nil || !(tps > 0) || n < 1 {
			return nil, fmt.Errorf("latency table row %q: want a test like pp128 and tokens/s like 812.34 ± 5.10", strings.TrimSpace(line))
		}
		b := Benchmark{Kernel: "engine", Unit: "ms"}
		if test[:2] == "pp" {
			b.Name, b.Value = fmt.Sprintf("latency/prefill %d tokens", n), 1e3*float64(n)/tps
		} else {
			b.Name, b.Value = "latency/decode per token", 1e3/tps
		}
		res.Benchmarks = append(res.Benchmarks, b)
	}
	if len(res.Benchmarks) == 0 {
		return nil, fmt.Errorf("no pp or tg row in bench latency's table")
	}
	return res, nil
}

// ThroughputSuite is `bench throughput` on the built-in default model (16 random prompts of 128
// tokens, 64 generated each, seeded), read from its --output-json file: total tokens/s and the
// decode-only steps' tokens/s, both higher-is-better.
func ThroughputSuite(threads int) Suite {
	return Suite{
		Name: "throughput",
		Args: []string{"bench", "throughput", "--num-prompts", "16", "--input-len", "128", "--output-len", "64",
			"--seed", "1", "--threads", strconv.Itoa(threads)},
		OutputFlag: "--output-json",
		Parse:      parseThroughputJSON,
	}
}

func parseThroughputJSON(out []byte) (*SuiteResult, error) {
	var r struct {
		TokensPerSecond       float64 `json:"tokens_per_second"`
		DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("bench throughput's JSON: %v", err)
	}
	if !(r.TokensPerSecond > 0) {
		return nil, fmt.Errorf("bench throughput's JSON has no positive tokens_per_second")
	}
	res := &SuiteResult{Suite: "throughput", Benchmarks: []Benchmark{
		{Name: "throughput/total", Kernel: "engine", Unit: "tok/s", Value: r.TokensPerSecond, HigherIsBetter: true},
	}}
	if r.DecodeTokensPerSecond > 0 {
		res.Benchmarks = append(res.Benchmarks, Benchmark{Name: "throughput/decode steps", Kernel: "engine", Unit: "tok/s", Value: r.DecodeTokensPerSecond, HigherIsBetter: true})
	}
	return res, nil
}
