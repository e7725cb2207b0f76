// The `bench sweep` command: one serving workload at several request rates and/or concurrency
// caps, one result JSON per point, a summary JSON and a comparison table.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/bench"
)

func init() {
	benchModes["sweep"] = runBenchSweep
}

// sweepPoint is one entry of summary.json.
type sweepPoint struct {
	RequestRate    bench.Rate         `json:"request_rate"`
	MaxConcurrency int                `json:"max_concurrency"`
	File           string             `json:"file"`
	Metrics        map[string]float64 `json:"metrics"`
}

func runBenchSweep(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench sweep", stderr)
	f := addServeFlags(fs)
	rates := fs.String("request-rates", "", "comma-separated request rates (numbers or inf)")
	concs := fs.String("max-concurrency-list", "", "comma-separated concurrency caps (0: none)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := f.takeGoodput(pos); err != nil {
		return err
	}
	if *rates == "" && *concs == "" {
		return usagef("give --request-rates and/or --max-concurrency-list")
	}
	if f.resultFile != "" {
		return usagef("--result-filename names one file; a sweep writes one per point (use --label and --result-dir)")
	}
	rateList := []string{f.rate}
	if *rates != "" {
		rateList = strings.Split(*rates, ",")
	}
	concList := []int{f.maxConc}
	if *concs != "" {
		concList = nil
		for _, s := range strings.Split(*concs, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || c < 0 {
				return usagef("--max-concurrency-list: %q is not a concurrency", s)
			}
			concList = append(concList, c)
		}
	}
	f.saveResult = true
	ctx, stop := interruptible()
	defer stop()
	var summary []sweepPoint
	var rs []*bench.Result
	var names []string
	for _, rate := range rateList {
		for _, c := range concList {
			if ctx.Err() != nil {
				break
			}
			f.rate, f.maxConc = strings.TrimSpace(rate), c
			run, err := f.prepare(stderr)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "\n### request rate %s, max concurrency %d\n", run.res.RequestRate, c)
			path, err := run.execute(ctx, f, stdout, stderr)
			if err != nil {
				return err
			}
			m := map[string]float64{}
			for _, k := range compareKeys {
				if v, ok := run.res.Metric(k); ok {
					m[k] = v
				}
			}
			summary = append(summary, sweepPoint{RequestRate: run.res.RequestRate, MaxConcurrency: c, File: filepath.Base(path), Metrics: m})
			res := run.res
			rs = append(rs, &res)
			names = append(names, fmt.Sprintf("rate %s conc %d", res.RequestRate, c))
		}
	}
	b, _ := json.MarshalIndent(summary, "", "  ")
	sp := filepath.Join(f.resultDir, "sweep-summary.json")
	if f.label != "" {
		sp = filepath.Join(f.resultDir, f.label+"-sweep-summary.json")
	}
	if err := os.WriteFile(sp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n")
	bench.Compare(stdout, rs, names)
	fmt.Fprintf(stderr, "saved %s\n", sp)
	return nil
}

// compareKeys are the summary.json metrics of a sweep point.
var compareKeys = []string{"completed", "failed", "duration", "request_throughput", "request_goodput",
	"output_throughput", "total_token_throughput", "max_concurrent_requests",
	"mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
	"mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_e2el_ms", "median_e2el_ms", "p99_e2el_ms"}
