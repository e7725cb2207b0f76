package regress

import (
	"fmt"
	"io"
	"math"
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
	fmt.Fprintf(w, "%d rounds alternating base and head in %.0fs; load average %s -> %s\n", r.Rounds, r.Seconds, r.LoadBefore, r.LoadAfter)
	fmt.Fprintf(w, "regression: the %.4g%% interval of head/base is above 1 and the estimate above %.4g (%.4g%% family-wise over %d benchmarks)\n\n",
		100*(1-r.Alpha), 1+r.Threshold, 100*r.Confidence, len(r.Comparisons))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tbase\thead\thead/base\tinterval\tp\tverdict\t")
	for _, c := range r.Comparisons {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t[%s, %s]\t%.3g\t%s\t\n", c.Name, dur(c.BaseNs), dur(c.HeadNs), c.Ratio, num(c.Lo), num(c.Hi), c.P, c.Verdict)
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

func dur(ns float64) string {
	return time.Duration(math.Round(ns)).String()
}

func num(x float64) string {
	if math.IsInf(x, 0) {
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("%.3f", x)
}
