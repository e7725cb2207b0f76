// Metrics: turn request outputs into the numbers vLLM reports.

package bench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Metric names, in print order: ttft, tpot, itl, e2el.
var MetricNames = []string{"ttft", "tpot", "itl", "e2el"}

var metricTitles = map[string][2]string{ // short name, section header
	"ttft": {"TTFT", "Time to First Token"},
	"tpot": {"TPOT", "Time per Output Token (excl. 1st token)"},
	"itl":  {"ITL", "Inter-token Latency"},
	"e2el": {"E2EL", "End-to-end Latency"},
}

// Goodput is a service level objective per metric ("ttft", "tpot", "e2el"), in milliseconds.
// A request is good when every named metric is at or under its objective.
type Goodput map[string]float64

// Met reports whether a request with these latencies (seconds) meets every objective (each in
// milliseconds), the rule of vLLM's goodput.
func (g Goodput) Met(ttft, tpot, e2el float64) bool {
	for k, slo := range g {
		v := e2el
		switch k {
		case "ttft":
			v = ttft
		case "tpot":
			v = tpot
		}
		if v*1000 > slo {
			return false
		}
	}
	return true
}

// PercentileWord is how vLLM names percentile p in keys and labels: 99 -> "99", 99.9 -> "99.9".
func PercentileWord(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// Percentile is numpy's default (linear interpolation between closest ranks) of sorted xs.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (rank-float64(lo))*(sorted[hi]-sorted[lo])
}

// summarize adds mean, median, std (population) and percentiles of xs (seconds) to stats as
// "<kind>_<name>_ms" keys. An empty xs gives zeros, as vLLM's np.mean(xs or 0) does.
func summarize(stats map[string]float64, name string, xs []float64, percentiles []float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	var mean, sd float64
	for _, x := range s {
		mean += x
	}
	if len(s) > 0 {
		mean /= float64(len(s))
		for _, x := range s {
			sd += (x - mean) * (x - mean)
		}
		sd = math.Sqrt(sd / float64(len(s)))
	}
	stats["mean_"+name+"_ms"] = mean * 1000
	stats["median_"+name+"_ms"] = Percentile(s, 50) * 1000
	stats["std_"+name+"_ms"] = sd * 1000
	for _, p := range percentiles {
		stats["p"+PercentileWord(p)+"_"+name+"_ms"] = Percentile(s, p) * 1000
	}
}

// Compute fills r's measured fields from outs (one per request sent, in dataset order) over a
// benchmark that started at start and took duration.
func Compute(r *Result, outs []Output, start time.Time, duration time.Duration, goodput Goodput, percentiles []float64) {
	secs := duration.Seconds()
	r.Duration = secs
	r.Completed, r.Failed, r.TotalInputTokens, r.TotalOutputTokens = 0, 0, 0, 0
	r.InputLens, r.OutputLens, r.CachedTokens = nil, nil, nil
	r.TTFTs, r.TPOTs, r.E2ELs, r.ITLs = []float64{}, []float64{}, []float64{}, [][]float64{}
	r.GeneratedTexts, r.Errors = []string{}, []string{}
	var allITL, tpots, lags []float64
	good := 0
	for _, o := range outs {
		r.InputLens = append(r.InputLens, o.PromptTokens)
		r.CachedTokens = append(r.CachedTokens, o.CachedTokens)
		r.Errors = append(r.Errors, o.Error)
		r.GeneratedTexts = append(r.GeneratedTexts, o.GeneratedText)
		if !o.Start.IsZero() && !o.Scheduled.IsZero() {
			lags = append(lags, o.Start.Sub(o.Scheduled).Seconds())
		}
		itl := make([]float64, len(o.ITL))
		for i, d := range o.ITL {
			itl[i] = d.Seconds()
		}
		r.ITLs = append(r.ITLs, itl)
		if !o.Success {
			r.Failed++
			r.OutputLens = append(r.OutputLens, 0)
			r.TTFTs = append(r.TTFTs, 0)
			r.TPOTs = append(r.TPOTs, 0)
			r.E2ELs = append(r.E2ELs, 0)
			continue
		}
		r.Completed++
		r.OutputLens = append(r.OutputLens, o.OutputTokens)
		r.TotalInputTokens += o.PromptTokens
		r.TotalOutputTokens += o.OutputTokens
		ttft, lat := o.TTFT.Seconds(), o.Latency.Seconds()
		tpot := 0.0
		if o.OutputTokens > 1 {
			tpot = (lat - ttft) / float64(o.OutputTokens-1)
			tpots = append(tpots, tpot)
		}
		allITL = append(allITL, itl...)
		r.TTFTs = append(r.TTFTs, ttft)
		r.TPOTs = append(r.TPOTs, tpot)
		r.E2ELs = append(r.E2ELs, lat)
		if goodput.Met(ttft, tpot, lat) {
			good++
		}
	}
	var succ []float64
	var e2el []float64
	for i, o := range outs {
		if o.Success {
			succ = append(succ, r.TTFTs[i])
			e2el = append(e2el, r.E2ELs[i])
		}
	}
	r.Stats = map[string]float64{}
	summarize(r.Stats, "ttft", succ, percentiles)
	summarize(r.Stats, "tpot", tpots, percentiles)
	summarize(r.Stats, "itl", allITL, percentiles)
	summarize(r.Stats, "e2el", e2el, percentiles)
	summarize(r.Stats, "dispatch_lag", lags, []float64{99})
	if secs > 0 {
		r.RequestThroughput = float64(r.Completed) / secs
		r.OutputThroughput = float64(r.TotalOutputTokens) / secs
		r.TotalTokenThroughput = float64(r.TotalInputTokens+r.TotalOutputTokens) / secs
		if len(goodput) > 0 {
			g := float64(good) / secs
			r.RequestGoodput = &g
		}
	}
	r.FailureReasons = FailureReasons(r.Errors)
	r.MaxOutputTokensPerS = peakTokensPerSecond(outs, start)
	r.MaxConcurrentRequests = peakConcurrency(outs)
}

// peakTokensPerSecond is the most output tokens whose chunks arrived in one 1-second bin of the
// run (a chunk carries output tokens / content chunks of its request).
func peakTokensPerSecond(outs []Output, start time.Time) float64 {
	bins := map[int64]float64{}
	for _, o := range outs {
		if !o.Success {
			continue
		}
		per := float64(o.OutputTokens) / float64(len(o.ITL)+1)
		t := o.Start.Add(o.TTFT)
		bins[int64(t.Sub(start)/time.Second)] += per
		for _, d := range o.ITL {
			t = t.Add(d)
			bins[int64(t.Sub(start)/time.Second)] += per
		}
	}
	peak := 0.0
	for _, v := range bins {
		peak = max(peak, v)
	}
	return peak
}

// peakConcurrency is the most requests in flight at once (sent, not yet finished).
func peakConcurrency(outs []Output) int {
	type ev struct {
		t time.Time
		d int
	}
	var evs []ev
	for _, o := range outs {
		if o.Start.IsZero() || o.End.IsZero() {
			continue
		}
		evs = append(evs, ev{o.Start, 1}, ev{o.End, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return a.d - b.d // ends before starts at the same instant
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}

// ParseGoodput reads "ttft:MS" items.
func ParseGoodput(items []string) (Goodput, error) {
	g := Goodput{}
	for _, it := range items {
		k, v, ok := cutColon(it)
		if !ok {
			return nil, fmt.Errorf("goodput %q: want METRIC:MILLISECONDS", it)
		}
		if k != "ttft" && k != "tpot" && k != "e2el" {
			return nil, fmt.Errorf("goodput %q: metric must be ttft, tpot or e2el", it)
		}
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("goodput %q: want a non-negative number of milliseconds", it)
		}
		g[k] = ms
	}
	return g, nil
}

func cutColon(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}
