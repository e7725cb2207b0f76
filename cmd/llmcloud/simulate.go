// The simulate command: llmcloud simulate --profile P [--replicas N] [--workload W] [--router
// POLICY] [bench serve's dataset and arrival flags] [--json OUT] [--search --slo SLO]: the
// capacity simulator of package sim. It prints what `bench serve` prints and saves the same
// JSON; --search finds the fewest replicas meeting an SLO (simulate_search.go).

package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/bench"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/router"
	"github.com/llmcloud/llmcloud/sim"
)

func init() {
	register("simulate", "simulate router + replicas running the engine's scheduler on a measured step-time profile: bench serve's metrics, or the fewest replicas for an SLO (--search)", runSimulate)
}

type simFlags struct {
	profile, model, workload, routerName, rate, jsonOut, label string
	replicas, numPrompts, maxConcurrency                       int
	force, search, detailed                                    bool
	burstiness                                                 float64
	seed                                                       uint64
	goodput                                                    []string
	percentileMetrics, metricPercentiles                       string
	slo                                                        string
	maxReplicas                                                int
	ds                                                         sim.Dataset
	tokenizer                                                  string
	as                                                         autoscaleFlags
	startDelay                                                 time.Duration
	cpus                                                       float64
	stepOverhead, requestOverhead                              time.Duration
	overheadsFile                                              string
}

func runSimulate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("simulate", stderr)
	var f simFlags
	fs.StringVar(&f.profile, "profile", "", "the step-time profile (llmcloud profile --engine MODEL -o FILE); required")
	fs.StringVar(&f.model, "model", "", "the model to simulate: checked against the profile's (file, size, sha256, arch, dtype)")
	fs.BoolVar(&f.force, "force", false, "use a profile measured on another CPU or model anyway")
	fs.IntVar(&f.replicas, "replicas", 1, "replicas behind the router")
	fs.StringVar(&f.routerName, "router", router.RoundRobin, "routing policy, as the router names them: round-robin, least-load, prefix, session")
	fs.StringVar(&f.routerName, "policy", router.RoundRobin, "alias of --router (the router's flag name)")
	fs.StringVar(&f.workload, "workload", "", "a trace file (JSON Lines: arrival, prompt_tokens, output_tokens, ...; docs/simulate.md) or a dataset name (as --dataset-name)")
	fs.StringVar(&f.ds.Name, "dataset-name", "random", "random, prefix-repetition, sharegpt, or file (alias custom), as bench serve")
	fs.StringVar(&f.ds.Path, "dataset-path", "", "ShareGPT JSON or prompts file")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "the model (or its tokenizer): simulate bench serve --tokenizer's very prompts, tokenized as the server does (BOS included)")
	fs.IntVar(&f.numPrompts, "num-prompts", 1000, "requests to simulate (a trace: all of its lines)")
	fs.IntVar(&f.ds.RandomInputLen, "random-input-len", 1024, "random: prompt tokens")
	fs.IntVar(&f.ds.RandomOutputLen, "random-output-len", 128, "random: output tokens")
	fs.Float64Var(&f.ds.RandomRangeRatio, "random-range-ratio", 0, "random: lengths uniform in [len*(1-r), len*(1+r)]")
	fs.IntVar(&f.ds.RandomPrefix, "random-prefix-len", 0, "random: tokens of a prefix shared by every prompt")
	fs.IntVar(&f.ds.PrefixLen, "prefix-repetition-prefix-len", 256, "prefix-repetition: prefix tokens")
	fs.IntVar(&f.ds.SuffixLen, "prefix-repetition-suffix-len", 256, "prefix-repetition: suffix tokens")
	fs.IntVar(&f.ds.NumPrefixes, "prefix-repetition-num-prefixes", 10, "prefix-repetition: distinct prefixes")
	fs.IntVar(&f.ds.PrefixOut, "prefix-repetition-output-len", 128, "prefix-repetition: output tokens")
	fs.IntVar(&f.ds.ShareGPTOut, "sharegpt-output-len", 0, "sharegpt: output tokens (0: the reply's length)")
	fs.IntVar(&f.ds.CustomOut, "custom-output-len", 256, "file: output tokens where a line gives none")
	fs.StringVar(&f.rate, "request-rate", "inf", "requests/s (Poisson or gamma arrivals, as bench serve), or inf")
	fs.StringVar(&f.rate, "rate", "inf", "alias of --request-rate")
	fs.Float64Var(&f.burstiness, "burstiness", 1, "arrival burstiness: 1 Poisson, <1 burstier (gamma shape)")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "at most this many requests in flight, as bench serve: a request arriving while they are waits for one to end (0: no cap)")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (dataset and arrivals, as bench serve)")
	fs.Func("goodput", "service level objectives METRIC:MS (ttft, tpot, e2el), as bench serve", func(s string) error {
		f.goodput = append(f.goodput, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })...)
		return nil
	})
	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl,e2el", "metrics to print percentiles of")
	fs.StringVar(&f.metricPercentiles, "metric-percentiles", "99", "percentiles to report, comma-separated")
	fs.StringVar(&f.jsonOut, "json", "", "save the result JSON (bench serve's format) to FILE")
	fs.StringVar(&f.label, "label", "", "label saved in the result")
	fs.BoolVar(&f.detailed, "detailed", false, "keep every request's inter-token latencies in the JSON (default: when under 10000 requests)")
	fs.BoolVar(&f.search, "search", false, "find the fewest replicas meeting --slo at the request rate")
	fs.StringVar(&f.slo, "slo", "ttft_p99<1s", "--search's objective: METRIC_STAT<VALUE, METRIC ttft|tpot|itl|e2el, STAT pNN|mean|median, VALUE in s or ms")
	fs.IntVar(&f.maxReplicas, "max-replicas", 4096, "--search gives up above this many replicas")
	f.as.register(fs) // up's autoscaler flags: --autoscale MIN:MAX, --autoscale-metric, --target-waiting ...
	fs.Float64Var(&f.cpus, "cpus", 0, "cores all the replicas share, as llmcloud up on this host would (e.g. $(nproc)): concurrent steps slow each other down when their threads outnumber them; 0: every replica has the profile's threads to itself")
	fs.DurationVar(&f.stepOverhead, "step-overhead", 0, "added to every engine step: the step loop's work outside the forward pass (measured: docs/simulate.md)")
	fs.DurationVar(&f.requestOverhead, "request-overhead", 0, "added to every request's TTFT and E2EL: client, router, HTTP, tokenization (measured: docs/simulate.md)")
	fs.StringVar(&f.overheadsFile, "request-overheads", "", "instead of --request-overhead: a file of measured per-request overheads, a line \"TTFT TPOT\" per request (Go durations), or \"TTFT TPOT CACHED\" with the prompt tokens the prefix cache supplied it (0: a miss); each simulated request gets one (of its own cache outcome if given), drawn with --seed, added to its TTFT and to each inter-token gap (the TPOT part less the lines' median when another request is in flight with it: the server's pace; docs/simulate.md)")
	fs.DurationVar(&f.startDelay, "replica-start-time", 2*time.Second, "--autoscale: how long a new replica takes to become ready")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud simulate --profile P [--replicas N] [--workload TRACE.jsonl | bench serve's dataset flags] [--router POLICY] [--request-rate R] [--json OUT] [--search --slo 'ttft_p99<1s']")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if f.profile == "" {
		return usagef("simulate needs --profile FILE (make one with: llmcloud profile --engine MODEL -o FILE)")
	}
	if _, err := router.NewPolicy(f.routerName); err != nil || f.routerName == router.PD {
		return usagef("--router %q: want %s, %s, %s or %s", f.routerName, router.RoundRobin, router.LeastLoad, router.Prefix, router.Session)
	}
	if f.replicas < 1 {
		return usagef("--replicas must be at least 1")
	}
	if f.cpus < 0 || f.stepOverhead < 0 || f.requestOverhead < 0 {
		return usagef("--cpus, --step-overhead and --request-overhead must not be negative")
	}
	var overheads []sim.Overhead
	if f.overheadsFile != "" {
		if f.requestOverhead != 0 {
			return usagef("--request-overhead and --request-overheads: give one")
		}
		b, err := os.ReadFile(f.overheadsFile)
		if err != nil {
			return err
		}
		if overheads, err = sim.ParseOverheads(string(b)); err != nil {
			return fmt.Errorf("--request-overheads %s: %w", f.overheadsFile, err)
		}
	}
	var asCfg *autoscale.Config
	if f.as.bounds != "" {
		c, err := f.as.config()
		if err != nil {
			return usagef("%v", err)
		}
		if f.as.interval <= 0 || f.startDelay < 0 {
			return usagef("--autoscale-interval must be positive and --replica-start-time not negative")
		}
		asCfg = &c
	}
	prof, err := sim.LoadProfile(f.profile)
	if err != nil {
		return err
	}
	if err := checkProfile(prof, &f, stderr); err != nil {
		return err
	}
	if f.ds.Name == "random" && !flagGiven(fs, "random-input-len") && !flagGiven(fs, "random-output-len") {
		f.ds.RandomInputLen, f.ds.RandomOutputLen = fitRandomDefaults(f.ds.RandomInputLen, f.ds.RandomOutputLen,
			f.ds.RandomPrefix, f.ds.RandomRangeRatio, prof.Engine.MaxModelLen, "the profile's", stderr)
	}
	run, err := f.prepare(prof)
	if err != nil {
		return err
	}
	run.autoscale, run.asInterval, run.startDelay = asCfg, f.as.interval, f.startDelay
	run.cpus, run.stepOverhead, run.requestOverhead = f.cpus, f.stepOverhead, f.requestOverhead
	run.overheads, run.overheadsFile = overheads, f.overheadsFile
	// The scheduler allocates a sequence (its token ids) per request and the simulation keeps
	// little alive: collecting less often saves time at little cost in memory.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	if f.search {
		return simSearch(run, &f, stdout, stderr)
	}
	t0 := time.Now()
	res, outc, err := run.simulate(f.replicas)
	if err != nil {
		return err
	}
	wall := time.Since(t0)
	fmt.Fprintf(stdout, "Simulated: %d replicas, router %s, profile %s (%s)\n", f.replicas, f.routerName, f.profile, prof.Model.File)
	fmt.Fprintf(stdout, "Traffic request rate: %s\n", res.RequestRate)
	fmt.Fprintf(stdout, "Burstiness factor: %g\n", f.burstiness)
	fmt.Fprintf(stdout, "Engine steps: %d, preemptions: %d; simulated in %.2f s\n", outc.Steps, outc.Preemptions, wall.Seconds())
	for _, e := range outc.Scaling {
		fmt.Fprintf(stdout, "Autoscaler at %.1f s: %d -> %d replicas (%s)\n", float64(e.At)/1e9, e.Before, e.After, e.Reason)
	}
	bench.Print(stdout, res)
	if f.jsonOut != "" {
		if _, err := res.Save("", f.jsonOut); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "saved %s\n", f.jsonOut)
	}
	return nil
}

// checkProfile fails (unless --force, then warns) when prof was measured on another CPU or,
// with --model, another model.
func checkProfile(prof *sim.Profile, f *simFlags, stderr io.Writer) error {
	var errs []error
	if err := prof.CheckCPU(); err != nil {
		errs = append(errs, err)
	}
	if f.model != "" {
		b, err := loader.Open(f.model, loader.Options{})
		if err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		id, err := modelID(b)
		b.Close()
		if err != nil {
			return err
		}
		if err := prof.CheckModel(id); err != nil {
			errs = append(errs, err)
		}
	}
	for _, err := range errs {
		if !f.force {
			return fmt.Errorf("%s: %w", f.profile, err)
		}
		fmt.Fprintf(stderr, "warning (--force): %s: %v\n", f.profile, err)
	}
	return nil
}

// simRun is a parsed simulation: the requests, and the result's parameters.
type simRun struct {
	prof     *sim.Profile
	reqs     []sim.Request
	res      bench.Result
	goodput  bench.Goodput
	pcts     []float64
	router   string
	detailed bool

	autoscale  *autoscale.Config
	asInterval time.Duration
	startDelay time.Duration

	cpus                          float64
	stepOverhead, requestOverhead time.Duration
	overheads                     []sim.Overhead
	overheadsFile                 string
	maxConcurrency                int
}

func (f *simFlags) prepare(prof *sim.Profile) (*simRun, error) {
	rate, goodput, pcts, metrics, err := parseReportFlags(f.rate, f.goodput, f.metricPercentiles, f.percentileMetrics)
	if err != nil {
		return nil, err
	}
	switch {
	case f.numPrompts < 1:
		return nil, usagef("--num-prompts must be at least 1")
	case f.burstiness <= 0:
		return nil, usagef("--burstiness must be positive")
	case f.maxConcurrency < 0:
		return nil, usagef("--max-concurrency must be positive (or 0: no cap)")
	}
	name := f.ds.Name
	var reqs []sim.Request
	params := map[string]any{}
	switch w := f.workload; {
	case w == "random" || w == "prefix-repetition" || w == "sharegpt" || w == "file" || w == "custom":
		f.ds.Name, name = w, w
		fallthrough
	case w == "":
		if f.tokenizer != "" {
			if f.ds.Tokenizer, err = bench.LoadTokenizer(f.tokenizer); err != nil {
				return nil, err
			}
		}
		if reqs, err = sim.Requests(f.ds, f.numPrompts, float64(rate), f.burstiness, f.seed); err != nil {
			return nil, err
		}
		params = f.ds.Params()
	default:
		if reqs, err = sim.ReadTrace(w); err != nil {
			return nil, err
		}
		name, params["dataset_path"] = "trace", w
		rate = bench.Rate(math.NaN())
		if n := len(reqs); n > 1 && reqs[n-1].At > 0 {
			rate = bench.Rate(float64(n-1) / (float64(reqs[n-1].At) / 1e9)) // the trace's mean rate
		} else {
			rate = bench.Rate(math.Inf(1))
		}
	}
	r := &simRun{prof: prof, reqs: reqs, goodput: goodput, pcts: pcts, router: f.routerName,
		detailed: f.detailed || len(reqs) < 10000, maxConcurrency: f.maxConcurrency}
	r.res = bench.Result{Backend: "sim", Label: f.label, ModelID: prof.Model.File, TokenizerID: "sim",
		DatasetName: name, NumPrompts: len(reqs), RequestRate: rate, Burstiness: f.burstiness, Seed: f.seed,
		IgnoreEOS: true, PercentileMetrics: metrics, MetricPercentiles: pcts, Params: params,
		Metadata: map[string]string{"simulated": "true", "profile": f.profile, "router": f.routerName, "replicas": strconv.Itoa(f.replicas)}}
	if len(goodput) > 0 {
		r.res.Goodput = goodput
	}
	if f.maxConcurrency > 0 {
		r.res.MaxConcurrency = &f.maxConcurrency
	}
	return r, nil
}

// simulate runs the workload on n replicas and returns the filled result.
func (r *simRun) simulate(n int) (*bench.Result, *sim.Outcome, error) {
	out, err := sim.Simulate(sim.Options{Profile: r.prof, Replicas: n, Router: r.router, Detailed: r.detailed,
		Autoscale: r.autoscale, AutoscaleInterval: r.asInterval, StartDelay: r.startDelay,
		CPUs: r.cpus, StepOverhead: r.stepOverhead, RequestOverhead: r.requestOverhead,
		Overheads: r.overheads, OverheadSeed: r.res.Seed, MaxConcurrency: r.maxConcurrency}, r.reqs)
	if err != nil {
		return nil, nil, err
	}
	res := r.res
	res.Metadata = map[string]string{}
	for k, v := range r.res.Metadata {
		res.Metadata[k] = v
	}
	res.Metadata["replicas"] = strconv.Itoa(n)
	if r.cpus > 0 {
		res.Metadata["cpus"] = strconv.FormatFloat(r.cpus, 'g', -1, 64)
	}
	if r.stepOverhead > 0 || r.requestOverhead > 0 {
		res.Metadata["step_overhead"], res.Metadata["request_overhead"] = r.stepOverhead.String(), r.requestOverhead.String()
	}
	if r.overheadsFile != "" {
		res.Metadata["request_overheads"] = fmt.Sprintf("%s (%d measured)", r.overheadsFile, len(r.overheads))
	}
	res.Date = time.Now().Format("20060102-150405")
	out.Fill(&res, r.goodput, r.pcts)
	return &res, out, nil
}
