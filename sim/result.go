// The simulation's result in `bench serve`'s form: the same bench.Result (JSON, printed block)
// with the same statistics, so `bench compare` and `bench plot` read simulated and measured
// runs alike. Inter-token latencies are summarized from their exact distribution (a weighted
// list), so a million requests need not keep a hundred million gaps.

package sim

import (
	"math"
	"slices"

	"github.com/llmcloud/llmcloud/bench"
)

// Fill writes o's measurements into res (its run parameters are the caller's), with
// percentiles pcts of the metrics and goodput's objectives, as bench.Compute does.
func (o *Outcome) Fill(res *bench.Result, goodput bench.Goodput, pcts []float64) {
	n := len(o.Requests)
	secs := float64(o.End) / 1e9
	res.Duration = secs
	res.Completed, res.Failed, res.TotalInputTokens, res.TotalOutputTokens = 0, 0, 0, 0
	res.InputLens, res.OutputLens, res.CachedTokens = make([]int, n), make([]int, n), make([]int, n)
	res.TTFTs, res.TPOTs, res.E2ELs = make([]float64, n), make([]float64, n), make([]float64, n)
	res.ITLs, res.GeneratedTexts, res.Errors = make([][]float64, n), make([]string, n), make([]string, n)
	var ttfts, tpots, e2els []float64
	good := 0
	for i := range n {
		r := &o.Requests[i]
		res.InputLens[i] = int(r.PromptLen)
		if o.Cached != nil {
			res.CachedTokens[i] = max(int(o.Cached[i]), 0)
		}
		res.Errors[i] = o.Errors[i]
		res.ITLs[i] = []float64{}
		if o.ITLs != nil {
			for _, g := range o.ITLs[i] {
				res.ITLs[i] = append(res.ITLs[i], float64(g)/1e9)
			}
		}
		if o.Errors[i] != "" {
			res.Failed++
			continue
		}
		res.Completed++
		out := int(o.NumOut[i])
		res.OutputLens[i] = out
		res.TotalInputTokens += int(r.PromptLen)
		res.TotalOutputTokens += out
		ttft, lat := float64(o.TTFT[i])/1e9, float64(o.E2E[i])/1e9
		tpot := 0.0
		if out > 1 {
			tpot = (lat - ttft) / float64(out-1)
			tpots = append(tpots, tpot)
		}
		res.TTFTs[i], res.TPOTs[i], res.E2ELs[i] = ttft, tpot, lat
		ttfts = append(ttfts, ttft)
		e2els = append(e2els, lat)
		if goodput.Met(ttft, tpot, lat) {
			good++
		}
	}
	res.Stats = map[string]float64{}
	summarize(res.Stats, "ttft", weightedOf(ttfts), pcts)
	summarize(res.Stats, "tpot", weightedOf(tpots), pcts)
	summarize(res.Stats, "itl", o.itlWeighted(), pcts)
	summarize(res.Stats, "e2el", weightedOf(e2els), pcts)
	summarize(res.Stats, "dispatch_lag", nil, []float64{99}) // simulated requests leave on time
	res.RequestThroughput, res.OutputThroughput, res.TotalTokenThroughput, res.RequestGoodput = 0, 0, 0, nil
	if secs > 0 {
		res.RequestThroughput = float64(res.Completed) / secs
		res.OutputThroughput = float64(res.TotalOutputTokens) / secs
		res.TotalTokenThroughput = float64(res.TotalInputTokens+res.TotalOutputTokens) / secs
		if len(goodput) > 0 {
			g := float64(good) / secs
			res.RequestGoodput = &g
		}
	}
	res.FailureReasons = bench.FailureReasons(res.Errors)
	peak := int64(0)
	for _, v := range o.TokensPerS {
		peak = max(peak, v)
	}
	res.MaxOutputTokensPerS = float64(peak)
	res.MaxConcurrentRequests = o.PeakConc
}

// wv is a value with a multiplicity.
type wv struct {
	v float64
	n int64
}

func weightedOf(xs []float64) []wv {
	out := make([]wv, len(xs))
	for i, x := range xs {
		out[i] = wv{x, 1}
	}
	return out
}

func (o *Outcome) itlWeighted() []wv {
	out := make([]wv, 0, len(o.ITLHist))
	for g, c := range o.ITLHist {
		out = append(out, wv{float64(g) / 1e9, c})
	}
	return out
}

// summarize adds mean, median, std (population) and percentiles of the weighted values xs
// (seconds) to stats as "<kind>_<name>_ms" keys, with bench's definitions (numpy's linear
// interpolation between closest ranks; zeros when empty).
func summarize(stats map[string]float64, name string, xs []wv, pcts []float64) {
	slices.SortFunc(xs, func(a, b wv) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	var total int64
	var mean, sd float64
	for _, x := range xs {
		total += x.n
		mean += x.v * float64(x.n)
	}
	if total > 0 {
		mean /= float64(total)
		for _, x := range xs {
			sd += (x.v - mean) * (x.v - mean) * float64(x.n)
		}
		sd = math.Sqrt(sd / float64(total))
	}
	// at returns the k-th smallest value (0-based) of the expanded list.
	cum := make([]int64, len(xs))
	var c int64
	for i, x := range xs {
		c += x.n
		cum[i] = c
	}
	at := func(k int64) float64 {
		i, _ := slices.BinarySearch(cum, k+1)
		return xs[i].v
	}
	pct := func(p float64) float64 {
		if total == 0 {
			return 0
		}
		rank := p / 100 * float64(total-1)
		lo := int64(math.Floor(rank))
		hi := min(lo+1, total-1)
		a, b := at(lo), at(hi)
		return a + (rank-float64(lo))*(b-a)
	}
	stats["mean_"+name+"_ms"] = mean * 1000
	stats["median_"+name+"_ms"] = pct(50) * 1000
	stats["std_"+name+"_ms"] = sd * 1000
	for _, p := range pcts {
		stats["p"+bench.PercentileWord(p)+"_"+name+"_ms"] = pct(p) * 1000
	}
}
