// The `bench serve` command: a serving benchmark against an OpenAI-compatible server, with
// `vllm bench serve`'s flags, metrics, printed block and result JSON (package bench does the
// work; this file parses flags). Ctrl-C stops the run; what finished is still printed and saved.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/llmcloud/llmcloud/bench"
)

func init() {
	benchModes["serve"] = runBenchServe
}

// serveFlags are the flags of `bench serve`, shared with `bench sweep`.
type serveFlags struct {
	baseURL, host, endpoint, backend, model, tokenizer string
	port                                               int
	dataset, datasetPath                               string
	numPrompts                                         int
	randIn, randOut, randPrefix                        int
	randRange                                          float64
	prefixLen, suffixLen, numPrefixes, prefixOut       int
	sharegptOut, customOut                             int
	rate                                               string
	burstiness                                         float64
	maxConc                                            int
	seed                                               uint64
	ignoreEOS                                          bool
	temperature                                        float64
	goodput                                            []string
	percentileMetrics, metricPercentiles               string
	numWarmups                                         int
	saveResult                                         bool
	resultDir, resultFile, label                       string
	metadata                                           []string
	disableProgress, saveDetailed                      bool
	timeout                                            time.Duration
	fs                                                 *flag.FlagSet // which flags were given (bench_serve_fit.go)
}

func addServeFlags(fs *flag.FlagSet) *serveFlags {
	f := &serveFlags{fs: fs}
	fs.StringVar(&f.baseURL, "base-url", "", "server URL (default http://HOST:PORT)")
	fs.StringVar(&f.host, "host", "127.0.0.1", "server host when --base-url is not given")
	fs.IntVar(&f.port, "port", 8000, "server port when --base-url is not given")
	fs.StringVar(&f.endpoint, "endpoint", "/v1/completions", "/v1/completions or /v1/chat/completions")
	fs.StringVar(&f.backend, "backend", "", "backend name saved in the result (default openai or openai-chat, from --endpoint)")
	fs.StringVar(&f.model, "model", "", "model name sent to the server (default: the first of GET /v1/models)")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "model or tokenizer file whose tokenizer counts tokens and makes random prompts: GGUF, Hugging Face directory, tokenizer.json, tokenizer.model, llama2.c .bin (default: random words, see docs/bench.md)")
	fs.StringVar(&f.dataset, "dataset-name", "random", "random, prefix-repetition, sharegpt, or file (alias custom)")
	fs.StringVar(&f.datasetPath, "dataset-path", "", "ShareGPT JSON or prompts file")
	fs.IntVar(&f.numPrompts, "num-prompts", 1000, "requests to send")
	fs.IntVar(&f.randIn, "random-input-len", 1024, "random: prompt tokens")
	fs.IntVar(&f.randOut, "random-output-len", 128, "random: output tokens asked for")
	fs.Float64Var(&f.randRange, "random-range-ratio", 0, "random: lengths uniform in [len*(1-r), len*(1+r)]")
	fs.IntVar(&f.randPrefix, "random-prefix-len", 0, "random: tokens of a prefix shared by every prompt")
	fs.IntVar(&f.prefixLen, "prefix-repetition-prefix-len", 256, "prefix-repetition: prefix tokens")
	fs.IntVar(&f.suffixLen, "prefix-repetition-suffix-len", 256, "prefix-repetition: suffix tokens")
	fs.IntVar(&f.numPrefixes, "prefix-repetition-num-prefixes", 10, "prefix-repetition: distinct prefixes")
	fs.IntVar(&f.prefixOut, "prefix-repetition-output-len", 128, "prefix-repetition: output tokens asked for")
	fs.IntVar(&f.sharegptOut, "sharegpt-output-len", 0, "sharegpt: output tokens (0: the reply's length)")
	fs.IntVar(&f.customOut, "custom-output-len", 256, "file: output tokens where a line gives none")
	fs.StringVar(&f.rate, "request-rate", "inf", "requests/s (Poisson or gamma arrivals), or inf: all at once")
	fs.Float64Var(&f.burstiness, "burstiness", 1, "arrival burstiness: 1 Poisson, <1 burstier, >1 more regular (gamma shape)")
	fs.IntVar(&f.maxConc, "max-concurrency", 0, "most requests in flight (0: no limit)")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (datasets and arrivals)")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", false, "send ignore_eos: generate all output tokens asked for")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature sent (0: greedy)")
	fs.Func("goodput", "service level objectives METRIC:MS (ttft, tpot, e2el), comma- or space-separated, repeatable", func(s string) error {
		f.goodput = append(f.goodput, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })...)
		return nil
	})
	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl,e2el", "metrics to print percentiles of")
	fs.StringVar(&f.metricPercentiles, "metric-percentiles", "99", "percentiles to report, comma-separated")
	fs.IntVar(&f.numWarmups, "num-warmups", 0, "unmeasured warm-up requests first")
	fs.BoolVar(&f.saveResult, "save-result", false, "save the result JSON")
	fs.BoolVar(&f.saveDetailed, "save-detailed", false, "accepted for vLLM compatibility (per-request lists are always saved)")
	fs.StringVar(&f.resultDir, "result-dir", "", "directory for the result JSON")
	fs.StringVar(&f.resultFile, "result-filename", "", "result file name (default {label|backend}-{rate}qps[-concurrency{C}]-{model}-{date}.json)")
	fs.StringVar(&f.label, "label", "", "label for the result (and its file name)")
	fs.Func("metadata", "KEY=VALUE saved in the result, repeatable", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want KEY=VALUE")
		}
		f.metadata = append(f.metadata, s)
		return nil
	})
	fs.BoolVar(&f.disableProgress, "disable-tqdm", false, "no progress bar")
	fs.DurationVar(&f.timeout, "request-timeout", 30*time.Minute, "per-request timeout (0: none)")
	return f
}

var goodputArg = regexp.MustCompile(`^(ttft|tpot|e2el):[0-9.]+$`)

// takeGoodput moves positional METRIC:MS words (vLLM's `--goodput ttft:300 tpot:50`) into the
// goodput list and rejects any other positional argument.
func (f *serveFlags) takeGoodput(pos []string) error {
	for _, p := range pos {
		if !goodputArg.MatchString(p) {
			return usagef("unexpected argument %q", p)
		}
		f.goodput = append(f.goodput, p)
	}
	return nil
}

// serveRun is a parsed `bench serve`: what to send, and the result to fill.
type serveRun struct {
	cfg bench.Config
	res bench.Result
}

func (f *serveFlags) prepare(stderr io.Writer) (*serveRun, error) {
	base := f.baseURL
	if base == "" {
		base = fmt.Sprintf("http://%s:%d", f.host, f.port)
	}
	base = strings.TrimRight(base, "/")
	chat := strings.Contains(f.endpoint, "chat")
	backend := f.backend
	if backend == "" {
		backend = "openai"
		if chat {
			backend = "openai-chat"
		}
	}
	rate, goodput, pcts, metrics, err := parseReportFlags(f.rate, f.goodput, f.metricPercentiles, f.percentileMetrics)
	if err != nil {
		return nil, err
	}
	switch {
	case f.numPrompts < 1:
		return nil, usagef("--num-prompts must be at least 1")
	case f.burstiness <= 0:
		return nil, usagef("--burstiness must be positive")
	case f.maxConc < 0 || f.numWarmups < 0:
		return nil, usagef("--max-concurrency and --num-warmups must be >= 0")
	}
	var tok bench.Tokens = bench.Words{}
	if f.tokenizer != "" {
		if tok, err = bench.LoadTokenizer(f.tokenizer); err != nil {
			return nil, err
		}
	}
	srv := askModels(base, f.timeout)
	maxLen := srv.contextOf(f.model)
	params := map[string]any{}
	var reqs []bench.Request
	switch f.dataset {
	case "random":
		in, out := f.randomLens(maxLen, stderr)
		o := bench.RandomOptions{InputLen: in, OutputLen: out, RangeRatio: f.randRange, PrefixLen: f.randPrefix}
		params["random_input_len"], params["random_output_len"] = o.InputLen, o.OutputLen
		params["random_range_ratio"], params["random_prefix_len"] = o.RangeRatio, o.PrefixLen
		reqs, err = bench.RandomRequests(tok, o, f.numPrompts, f.seed)
	case "prefix-repetition":
		o := bench.PrefixRepetitionOptions{PrefixLen: f.prefixLen, SuffixLen: f.suffixLen, NumPrefixes: f.numPrefixes, OutputLen: f.prefixOut}
		params["prefix_repetition_prefix_len"], params["prefix_repetition_suffix_len"] = o.PrefixLen, o.SuffixLen
		params["prefix_repetition_num_prefixes"], params["prefix_repetition_output_len"] = o.NumPrefixes, o.OutputLen
		reqs, err = bench.PrefixRepetitionRequests(tok, o, f.numPrompts, f.seed)
	case "sharegpt", "file", "custom":
		if f.datasetPath == "" {
			return nil, usagef("--dataset-name %s needs --dataset-path", f.dataset)
		}
		params["dataset_path"] = f.datasetPath
		if f.dataset == "sharegpt" {
			params["sharegpt_output_len"] = f.sharegptOut
			reqs, err = bench.ShareGPTRequests(tok, f.datasetPath, f.numPrompts, f.sharegptOut, f.seed)
		} else {
			params["custom_output_len"] = f.customOut
			reqs, err = bench.FileRequests(tok, f.datasetPath, f.numPrompts, f.customOut)
		}
	default:
		return nil, usagef("unknown --dataset-name %q (random, prefix-repetition, sharegpt, file)", f.dataset)
	}
	if err != nil {
		return nil, err
	}
	if err := f.checkFit(reqs, maxLen, stderr); err != nil {
		return nil, err
	}
	model := f.model
	if model == "" {
		if srv.err != nil {
			return nil, fmt.Errorf("no --model and %v", srv.err)
		}
		model = srv.ids[0]
	}
	client := &bench.Client{URL: base + f.endpoint, Chat: chat, Model: model, IgnoreEOS: f.ignoreEOS,
		Temp: f.temperature, HTTP: bench.NewHTTPClient(f.timeout)}
	if h, ok := tok.(*bench.HFTokens); ok {
		client.Count = h.Count
	}
	run := &serveRun{
		cfg: bench.Config{Client: client, Requests: reqs, RequestRate: rate, Burstiness: f.burstiness,
			MaxConcurrency: f.maxConc, Seed: f.seed, NumWarmups: f.numWarmups, Goodput: goodput, Percentiles: pcts},
		res: bench.Result{Backend: backend, Endpoint: f.endpoint, BaseURL: base, Label: f.label, ModelID: model,
			TokenizerID: tok.Name(), DatasetName: f.dataset, NumPrompts: f.numPrompts, RequestRate: rate,
			Burstiness: f.burstiness, Seed: f.seed, IgnoreEOS: f.ignoreEOS, NumWarmups: f.numWarmups,
			PercentileMetrics: metrics, MetricPercentiles: pcts, Params: params},
	}
	if len(goodput) > 0 {
		run.res.Goodput = goodput
	}
	if f.maxConc > 0 {
		c := f.maxConc
		run.res.MaxConcurrency = &c
	}
	if len(f.metadata) > 0 {
		run.res.Metadata = map[string]string{}
		for _, kv := range f.metadata {
			k, v, _ := strings.Cut(kv, "=")
			run.res.Metadata[k] = v
		}
	}
	return run, nil
}

// execute runs one benchmark: header lines, a progress bar on stderr, the result block on
// stdout, and the JSON saved when asked. ctx cancellation (Ctrl-C) ends the run early.
func (r *serveRun) execute(ctx context.Context, f *serveFlags, stdout, stderr io.Writer) (string, error) {
	mc := "None"
	if f.maxConc > 0 {
		mc = strconv.Itoa(f.maxConc)
	}
	proc := "Poisson process"
	if f.burstiness != 1 {
		proc = "Gamma distribution"
	}
	fmt.Fprintf(stdout, "Traffic request rate: %s\n", r.res.RequestRate)
	fmt.Fprintf(stdout, "Burstiness factor: %g (%s)\n", f.burstiness, proc)
	fmt.Fprintf(stdout, "Maximum request concurrency: %s\n", mc)
	if r.cfg.NumWarmups > 0 {
		fmt.Fprintf(stdout, "Warming up with %d requests\n", r.cfg.NumWarmups)
	}
	if !f.disableProgress {
		bar := progressbar.NewOptions(len(r.cfg.Requests), progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("requests"), progressbar.OptionShowCount(), progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("req"), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }), progressbar.OptionSetWidth(30))
		// Requests only count themselves (an atomic add); the bar is drawn from its own
		// goroutine ten times a second, so no request goroutine ever renders it.
		var done atomic.Int64
		r.cfg.Progress = func() { done.Add(1) }
		stopBar := make(chan struct{})
		barDone := make(chan struct{})
		go func() {
			defer close(barDone)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					bar.Set64(done.Load())
				case <-stopBar:
					bar.Set64(done.Load())
					return
				}
			}
		}()
		defer func() { close(stopBar); <-barDone; bar.Exit() }()
	}
	r.res.Date = time.Now().Format("20060102-150405")
	restoreGC := bench.TuneGC()
	bench.Run(ctx, r.cfg, &r.res)
	restoreGC()
	if r.res.Interrupted {
		fmt.Fprintf(stderr, "\ninterrupted: %d requests finished, %d failed or cut\n", r.res.Completed, r.res.Failed)
	}
	bench.Print(stdout, &r.res)
	if !f.saveResult {
		return "", nil
	}
	name := f.resultFile
	if name == "" {
		name = r.res.FileName()
	}
	p, err := r.res.Save(f.resultDir, name)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(stderr, "saved %s\n", p)
	return p, nil
}

// interruptible returns a context cancelled by the first Ctrl-C or SIGTERM (a second one kills
// the process as usual once stop is called).
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func runBenchServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench serve", stderr)
	f := addServeFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := f.takeGoodput(pos); err != nil {
		return err
	}
	run, err := f.prepare(stderr)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	_, err = run.execute(ctx, f, stdout, stderr)
	return err
}

// parseReportFlags reads the flags bench serve and simulate share: --request-rate, --goodput,
// --metric-percentiles and --percentile-metrics (vLLM's names and rules).
func parseReportFlags(rateFlag string, goodputFlag []string, percentiles, metricsFlag string) (rate bench.Rate, goodput bench.Goodput, pcts []float64, metrics []string, err error) {
	if rate, err = bench.ParseRate(rateFlag); err != nil {
		return 0, nil, nil, nil, usagef("%v", err)
	}
	if goodput, err = bench.ParseGoodput(goodputFlag); err != nil {
		return 0, nil, nil, nil, usagef("%v", err)
	}
	for _, s := range strings.Split(percentiles, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || p < 0 || p > 100 {
			return 0, nil, nil, nil, usagef("--metric-percentiles: %q is not a percentile", s)
		}
		pcts = append(pcts, p)
	}
	for _, m := range strings.Split(metricsFlag, ",") {
		m = strings.TrimSpace(m)
		if m != "ttft" && m != "tpot" && m != "itl" && m != "e2el" {
			return 0, nil, nil, nil, usagef("--percentile-metrics: unknown metric %q (ttft, tpot, itl, e2el)", m)
		}
		metrics = append(metrics, m)
	}
	return rate, goodput, pcts, metrics, nil
}
