// Package regress is a performance-regression check between two builds of llmcloud
// (`llmcloud bench regress`): it runs fixed benchmark suites with each binary, alternating
// them round by round, and compares each benchmark's figure, head against base, with a
// distribution-free confidence interval (stats.go). It only runs processes (git, go build and
// the two binaries) and reads what they print: no compute package is imported (the kernel
// suite itself is perf/kernelbench; the engine suites are `bench latency` and
// `bench throughput`).
package regress

// SuiteResult is what one suite run prints with --json (`llmcloud bench kernels --json`):
// one round of every benchmark in one process. The engine suites' output is turned into one
// (suites.go).
type SuiteResult struct {
	Suite      string      `json:"suite"`
	Threads    int         `json:"threads"`
	Ops        int         `json:"ops"` // timed ops of each benchmark
	Injected   string      `json:"injected_slowdown,omitempty"`
	Benchmarks []Benchmark `json:"benchmarks"`
}

// Benchmark is one benchmark's figure in one round.
type Benchmark struct {
	Name   string `json:"name"`   // unique in the suite, e.g. "matmul/q4_0 gemv 2048x2048"
	Kernel string `json:"kernel"` // the kernel it exercises, e.g. "matmul/q4_0"
	// NsPerOp is the round's time per operation: for the kernel suite, the 10th percentile of
	// the round's single-op times (perf/kernelbench). Unused when Unit is set.
	NsPerOp float64 `json:"ns_per_op,omitempty"`
	Ops     int     `json:"ops,omitempty"`
	// BytesPerOp is the weight bytes one op reads (0 when not meaningful); GB/s is derived.
	BytesPerOp int64 `json:"bytes_per_op,omitempty"`
	// Unit and Value are a figure other than a time per op (the engine suites): "ms" of a
	// latency, "tok/s" of a throughput. HigherIsBetter says which way is a regression: for a
	// throughput the compared ratio is base/head, so that > 1 means slower for every figure.
	Unit           string  `json:"unit,omitempty"`
	Value          float64 `json:"value,omitempty"`
	HigherIsBetter bool    `json:"higher_is_better,omitempty"`
}

// Figure is the benchmark's compared figure: Value when a Unit is given, else NsPerOp.
func (b Benchmark) Figure() float64 {
	if b.Unit != "" {
		return b.Value
	}
	return b.NsPerOp
}

// unit is the figure's unit, "ns/op" for a time per op.
func (b Benchmark) unit() string {
	if b.Unit != "" {
		return b.Unit
	}
	return "ns/op"
}

// slowdown is the time ratio of one round: head/base for a time or latency, base/head for a
// throughput. Above 1 the head was slower.
func slowdown(base, head float64, higherIsBetter bool) float64 {
	if higherIsBetter {
		return base / head
	}
	return head / base
}
