package regress

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes the benchstat-like table.
func (r *Result) Print(w io.Writer) {
	inj := func(s string) string {
		if s == "" {
			return ""
		}
		return " (injected slowdown " + s + ")"
	}
	fmt.Fprintf(w, "base: %s%s\nhead: %s%s\n", r.Base, inj(r.BaseInject), r.Head, inj(r.HeadInject))
	if r.BaseCommit != "" || r.HeadCommit != "" {
		fmt.Fprintf(w, "commits: base %s, head %s\n", orUnknown(r.BaseCommit), orUnknown(r.HeadCommit))
	}
	fmt.Fprintf(w, "suites %s: %d rounds alternating base and head in %.0fs; load average %s -> %s\n", strings.Join(r.Suites, ","), r.Rounds, r.Seconds, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "slower is the time ratio head/base (base/head of a throughput, tok/s) above 1; regression: its %.4g%% interval above 1 and the estimate above %.4g (%.4g%% family-wise over %d benchmarks)\n\n",
		100*(1-r.Alpha), 1+r.Threshold, 100*r.Confidence, len(r.Comparisons))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tbase\thead\tslower\tinterval\tp\tverdict\t")
	for _, c := range r.Comparisons {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t[%s, %s]\t%.3g\t%s\t\n", c.Name, figure(c.BaseMedian, c.Unit), figure(c.HeadMedian, c.Unit), c.Ratio, num(c.Lo), num(c.Hi), c.P, c.Verdict)
	}
	tw.Flush()
	switch r.Regressions {
	case 0:
		fmt.Fprintln(w, "\nno regression")
	default:
		fmt.Fprintf(w, "\n%d regression(s):", r.Regressions)
		for _, c := range r.Comparisons {
			if c.Verdict == "regression" {
				fmt.Fprintf(w, " %s (%+.1f%%)", c.Name, 100*(c.Ratio-1))
			}
		}
		fmt.Fprintln(w)
	}
}

// figure prints a median in its unit: a duration for ns/op.
func figure(x float64, unit string) string {
	if unit == "ns/op" {
		return time.Duration(math.Round(x)).String()
	}
	return fmt.Sprintf("%.4g %s", x, unit)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func num(x float64) string {
	if math.IsInf(x, 0) {
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("%.3f", x)
}
