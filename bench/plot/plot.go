// Package plot draws serving benchmark results as PNG charts with gonum/plot: latency CDFs
// (one chart per metric, one line per result) and, for a sweep, throughput and latency against
// request rate or concurrency.
package plot

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/llmcloud/llmcloud/bench"
)

const width, height = 8 * vg.Inch, 5 * vg.Inch

// samples returns a result's per-request values of metric (ttft, tpot, itl, e2el) in ms, for
// successful requests (TPOT: those with more than one output token).
func samples(r *bench.Result, metric string) []float64 {
	ok := func(i int) bool { return i < len(r.Errors) && r.Errors[i] == "" || i >= len(r.Errors) }
	var xs []float64
	switch metric {
	case "ttft", "tpot", "e2el":
		src := map[string][]float64{"ttft": r.TTFTs, "tpot": r.TPOTs, "e2el": r.E2ELs}[metric]
		for i, v := range src {
			if ok(i) && (metric != "tpot" || v > 0) {
				xs = append(xs, v*1000)
			}
		}
	case "itl":
		for i, l := range r.ITLs {
			if ok(i) {
				for _, v := range l {
					xs = append(xs, v*1000)
				}
			}
		}
	}
	slices.Sort(xs)
	return xs
}

var cdfTitles = map[string]string{
	"ttft": "Time to first token", "tpot": "Time per output token (excl. 1st)",
	"itl": "Inter-token latency", "e2el": "End-to-end latency",
}

// CDFs writes <metric>_cdf.png for ttft, tpot, itl and e2el into dir (metrics no result has
// samples of are skipped) and returns the files written. The x axis ends at 1.5 x the largest
// p99; the legend gives each result's p50 and p99.
func CDFs(rs []*bench.Result, names []string, dir string) ([]string, error) {
	var files []string
	for _, m := range bench.MetricNames {
		p := plot.New()
		p.Title.Text = cdfTitles[m] + " (CDF)"
		p.X.Label.Text = m + " (ms)"
		p.Y.Label.Text = "fraction of " + map[bool]string{true: "gaps", false: "requests"}[m == "itl"]
		p.Y.Min, p.Y.Max = 0, 1
		p.Add(plotter.NewGrid())
		p.Legend.Top, p.Legend.Left = false, false
		p.Legend.YOffs = vg.Points(50)
		p.Legend.XOffs = vg.Points(-10)
		any := false
		xmax := 0.0
		for i, r := range rs {
			xs := samples(r, m)
			if len(xs) == 0 {
				continue
			}
			any = true
			xmax = max(xmax, 1.5*bench.Percentile(xs, 99))
			pts := make(plotter.XYs, 0, 2*len(xs))
			// Thin very long series (ITL has one point per token) to at most 2,000 steps.
			step := max(1, len(xs)/2000)
			for k := 0; k < len(xs); k += step {
				pts = append(pts, plotter.XY{X: xs[k], Y: float64(k+1) / float64(len(xs))})
			}
			pts = append(pts, plotter.XY{X: xs[len(xs)-1], Y: 1})
			l, err := plotter.NewLine(pts)
			if err != nil {
				return files, err
			}
			l.Color = plotutil.Color(i)
			l.Width = vg.Points(1.5)
			l.Dashes = plotutil.Dashes(i / 7)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s (p50 %.1f, p99 %.1f ms)", names[i], bench.Percentile(xs, 50), bench.Percentile(xs, 99)), l)
		}
		if !any {
			continue
		}
		// Clip the x axis at 1.5 x the largest p99 so rare stalls do not squash the curves.
		p.X.Max = min(p.X.Max, xmax)
		f := filepath.Join(dir, m+"_cdf.png")
		if err := p.Save(width, height, f); err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}

// SweepAxis picks the x axis of a sweep: "request_rate" when the results differ in finite
// request rates, else "max_concurrency" when they differ in concurrency caps, else "".
func SweepAxis(rs []*bench.Result) string {
	rates, concs := map[float64]bool{}, map[int]bool{}
	finite := true
	for _, r := range rs {
		rates[float64(r.RequestRate)] = true
		finite = finite && !math.IsInf(float64(r.RequestRate), 1)
		c := 0
		if r.MaxConcurrency != nil {
			c = *r.MaxConcurrency
		}
		concs[c] = true
	}
	switch {
	case len(rs) < 2:
		return ""
	case len(rates) > 1 && finite:
		return "request_rate"
	case len(concs) > 1:
		return "max_concurrency"
	}
	return ""
}

func xOf(r *bench.Result, axis string) float64 {
	if axis == "request_rate" {
		return float64(r.RequestRate)
	}
	if r.MaxConcurrency == nil {
		return 0
	}
	return float64(*r.MaxConcurrency)
}

// Sweep writes sweep_throughput.png (request and token throughputs) and sweep_<metric>.png
// (mean, median, p99 of ttft, tpot, itl, e2el) against the sweep axis.
func Sweep(rs []*bench.Result, axis, dir string) ([]string, error) {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b *bench.Result) int { return cmp.Compare(xOf(a, axis), xOf(b, axis)) })
	xlabel := map[string]string{"request_rate": "request rate (req/s)", "max_concurrency": "max concurrency"}[axis]
	series := func(key string) plotter.XYs {
		var pts plotter.XYs
		for _, r := range rs {
			if v, ok := r.Metric(key); ok {
				pts = append(pts, plotter.XY{X: xOf(r, axis), Y: v})
			}
		}
		return pts
	}
	chart := func(name, title, ylabel string, keys, labels []string) (string, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = xlabel
		p.Y.Label.Text = ylabel
		p.Y.Min = 0
		p.Add(plotter.NewGrid())
		p.Legend.Top, p.Legend.Left = true, true
		for i, k := range keys {
			pts := series(k)
			if len(pts) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return "", err
			}
			l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
			l.Width = vg.Points(1.5)
			s.Shape = plotutil.Shape(i)
			p.Add(l, s)
			p.Legend.Add(labels[i], l, s)
		}
		p.Y.Max *= 1.3 // room for the legend above the lines
		f := filepath.Join(dir, name)
		return f, p.Save(width, height, f)
	}
	var files []string
	f, err := chart("sweep_throughput.png", "Throughput", "tokens/s",
		[]string{"output_throughput", "total_token_throughput"}, []string{"output tok/s", "total tok/s"})
	if err != nil {
		return files, err
	}
	files = append(files, f)
	f, err = chart("sweep_requests.png", "Request throughput", "requests/s",
		[]string{"request_throughput", "request_goodput"}, []string{"requests/s", "goodput requests/s"})
	if err != nil {
		return files, err
	}
	files = append(files, f)
	for _, m := range bench.MetricNames {
		f, err := chart("sweep_"+m+".png", cdfTitles[m], m+" (ms)",
			[]string{"mean_" + m + "_ms", "median_" + m + "_ms", "p99_" + m + "_ms"}, []string{"mean", "median", "p99"})
		if err != nil {
			return files, err
		}
		files = append(files, f)
	}
	return files, nil
}
