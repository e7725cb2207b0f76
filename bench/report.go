// Report: the result block `vllm bench serve` prints, line for line.

package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// center pads s with c to width n, the extra pad character going right (Python's "^").
func center(s string, c byte, n int) string {
	pad := n - len(s)
	if pad <= 0 {
		return s
	}
	l := pad / 2
	return strings.Repeat(string(c), l) + s + strings.Repeat(string(c), pad-l)
}

// Print writes r's result block. Sections appear for r.PercentileMetrics, percentiles for
// r.MetricPercentiles.
func Print(w io.Writer, r *Result) {
	line := func(name string, v any) {
		var s string
		switch v := v.(type) {
		case float64:
			s = fmt.Sprintf("%.2f", v)
		default:
			s = fmt.Sprint(v)
		}
		fmt.Fprintf(w, "%-40s %s\n", name, s)
	}
	fmt.Fprintln(w, center(" Serving Benchmark Result ", '=', 50))
	line("Successful requests:", r.Completed)
	line("Failed requests:", r.Failed)
	for _, f := range r.FailureReasons {
		fmt.Fprintf(w, "  %d x %s\n", f.Count, f.Reason)
	}
	if r.MaxConcurrency != nil {
		line("Maximum request concurrency:", *r.MaxConcurrency)
	}
	if !math.IsInf(float64(r.RequestRate), 1) {
		line("Request rate configured (RPS):", float64(r.RequestRate))
	}
	line("Benchmark duration (s):", r.Duration)
	line("Total input tokens:", r.TotalInputTokens)
	line("Total generated tokens:", r.TotalOutputTokens)
	line("Request throughput (req/s):", r.RequestThroughput)
	if r.RequestGoodput != nil {
		line("Request goodput (req/s):", *r.RequestGoodput)
	}
	line("Output token throughput (tok/s):", r.OutputThroughput)
	line("Peak output token throughput (tok/s):", r.MaxOutputTokensPerS)
	line("Peak concurrent requests:", float64(r.MaxConcurrentRequests))
	line("Total Token throughput (tok/s):", r.TotalTokenThroughput)
	for _, m := range r.PercentileMetrics {
		t, ok := metricTitles[m]
		if !ok {
			continue
		}
		fmt.Fprintln(w, center(t[1], '-', 50))
		line(fmt.Sprintf("Mean %s (ms):", t[0]), r.Stats["mean_"+m+"_ms"])
		line(fmt.Sprintf("Median %s (ms):", t[0]), r.Stats["median_"+m+"_ms"])
		for _, p := range r.MetricPercentiles {
			pw := PercentileWord(p)
			line(fmt.Sprintf("P%s %s (ms):", pw, t[0]), r.Stats["p"+pw+"_"+m+"_ms"])
		}
	}
	fmt.Fprintln(w, strings.Repeat("=", 50))
}
