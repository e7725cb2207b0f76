// Package regress is a performance-regression check between two builds of llmcloud
// (`llmcloud bench regress`): it runs one fixed benchmark suite with each binary, alternating
// them round by round, and compares each benchmark's time per operation, head against base,
// with a distribution-free confidence interval (stats.go). It only runs processes and reads
// their JSON: no compute package is imported (the kernel suite itself is perf/kernelbench).
package regress

// SuiteResult is what one suite run prints with --json (`llmcloud bench kernels --json`):
// one round of every benchmark in one process.
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
	// the round's single-op times (perf/kernelbench).
	NsPerOp float64 `json:"ns_per_op"`
	Ops     int     `json:"ops"`
	// BytesPerOp is the weight bytes one op reads (0 when not meaningful); GB/s is derived.
	BytesPerOp int64 `json:"bytes_per_op,omitempty"`
}
