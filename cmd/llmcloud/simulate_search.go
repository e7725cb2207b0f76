// simulate --search: the fewest replicas whose simulated run meets an SLO such as
// "ttft_p99<1s" at the workload's rate, found by doubling then bisection (more replicas never
// make a latency worse under these policies: assumed, and each probe is printed), and
// printed with its margin at N and N-1 replicas.

package main

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/llmcloud/llmcloud/bench"
)

// slo is a parsed objective: the statistic key of bench.Result.Stats and the bound in ms.
type slo struct {
	text   string
	key    string  // e.g. p99_ttft_ms
	pct    float64 // the percentile to compute (-1: mean or median)
	limitM float64 // milliseconds
}

var sloRE = regexp.MustCompile(`^(ttft|tpot|itl|e2el)_(p[0-9]+(?:\.[0-9]+)?|mean|median)\s*<\s*([0-9]*\.?[0-9]+)\s*(ms|s)$`)

func parseSLO(s string) (slo, error) {
	m := sloRE.FindStringSubmatch(s)
	if m == nil {
		return slo{}, usagef("--slo %q: want METRIC_STAT<VALUE like ttft_p99<1s or tpot_median<50ms (METRIC ttft, tpot, itl, e2el; STAT pNN, mean, median)", s)
	}
	v, _ := strconv.ParseFloat(m[3], 64)
	if m[4] == "s" {
		v *= 1000
	}
	o := slo{text: s, limitM: v, pct: -1}
	switch m[2] {
	case "mean", "median":
		o.key = m[2] + "_" + m[1] + "_ms"
	default:
		p, _ := strconv.ParseFloat(m[2][1:], 64)
		if p > 100 {
			return slo{}, usagef("--slo %q: percentile over 100", s)
		}
		o.pct = p
		o.key = "p" + bench.PercentileWord(p) + "_" + m[1] + "_ms"
	}
	return o, nil
}

// probe is one simulated replica count.
type probe struct {
	n      int
	value  float64 // the SLO's statistic, ms
	failed int
	ok     bool
}

func simSearch(run *simRun, f *simFlags, stdout, stderr io.Writer) error {
	o, err := parseSLO(f.slo)
	if err != nil {
		return err
	}
	if run.autoscale != nil {
		return usagef("--search finds a fixed replica count: drop --autoscale")
	}
	if o.pct >= 0 {
		run.pcts = append(run.pcts, o.pct)
	}
	run.detailed = false
	cache := map[int]probe{}
	try := func(n int) (probe, error) {
		if p, ok := cache[n]; ok {
			return p, nil
		}
		t0 := time.Now()
		res, _, err := run.simulate(n)
		if err != nil {
			return probe{}, err
		}
		p := probe{n: n, value: res.Stats[o.key], failed: res.Failed}
		p.ok = p.failed == 0 && p.value < o.limitM
		cache[n] = p
		fmt.Fprintf(stdout, "  %5d replicas: %s = %.1f ms, %d failed -> %s (%.1f s)\n", n, o.key, p.value, p.failed, map[bool]string{true: "meets", false: "misses"}[p.ok], time.Since(t0).Seconds())
		return p, nil
	}
	fmt.Fprintf(stdout, "Searching the fewest replicas with %s at %s requests/s (%d requests, router %s)\n", o.text, run.res.RequestRate, len(run.reqs), run.router)
	lo, hi := 0, 1 // lo misses (0 always does), hi is the candidate
	for {
		p, err := try(hi)
		if err != nil {
			return err
		}
		if p.ok {
			break
		}
		lo = hi
		if hi >= f.maxReplicas {
			return fmt.Errorf("no replica count up to --max-replicas %d meets %s (at %d: %.1f ms)", f.maxReplicas, o.text, hi, p.value)
		}
		hi = min(2*hi, f.maxReplicas)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		p, err := try(mid)
		if err != nil {
			return err
		}
		if p.ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	best := cache[hi]
	fmt.Fprintf(stdout, "Plan: %d replicas for %s at %s requests/s: predicted %.1f ms, margin %.1f%% under the target\n",
		hi, o.text, run.res.RequestRate, best.value, 100*(o.limitM-best.value)/o.limitM)
	if hi > 1 {
		prev := cache[hi-1]
		if prev.n == 0 {
			if prev, err = try(hi - 1); err != nil {
				return err
			}
		}
		if prev.value < o.limitM { // it missed by failed requests alone
			fmt.Fprintf(stdout, "      %d replicas: predicted %.1f ms (%.1f%% under the target) but %d failed\n",
				hi-1, prev.value, 100*(o.limitM-prev.value)/o.limitM, prev.failed)
		} else {
			fmt.Fprintf(stdout, "      %d replicas: predicted %.1f ms (%.1f%% over the target), %d failed\n",
				hi-1, prev.value, 100*(prev.value-o.limitM)/o.limitM, prev.failed)
		}
	}
	return nil
}
