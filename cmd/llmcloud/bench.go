// The bench command: engine benchmarks. `bench latency` measures prompt processing (pp) and
// token generation (tg) speed like llama-bench and prints its table, plus the share of the
// machine's memory read bandwidth decode uses. With --draft or --speculative-config it
// compares single-stream decode with and without speculative decoding instead
// (bench_latency_spec.go).
package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/perf"
)

func init() {
	register("bench", "benchmarks: latency (llama-bench pp/tg), throughput (offline engine), serve/compare/plot/sweep (any OpenAI server), structured (grammar masks, MaskBench), kernels and regress (two builds compared)", runBench)
}

var benchModes = map[string]func(args []string, stdout, stderr io.Writer) error{
	"latency": runBenchLatency,
}

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, "usage: llmcloud bench latency|throughput|serve|compare|plot|sweep|structured|kernels|regress [flags]   (`llmcloud bench NAME -h` for flags)")
		if len(args) == 0 {
			return usagef("which benchmark? (%s)", benchNames())
		}
		return nil
	}
	run, ok := benchModes[args[0]]
	if !ok {
		return usagef("unknown benchmark %q (want one of: %s)", args[0], benchNames())
	}
	return run(args[1:], stdout, stderr)
}

func runBenchLatency(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench latency", stderr)
	var path string
	fs.StringVar(&path, "model", "", "model file (GGUF, HF directory, llama2.c .bin; default: the built-in default model)")
	fs.StringVar(&path, "m", "", "shorthand for --model")
	prompt := fs.Int("p", 512, "pp test: prompt tokens in one batch (0 = skip)")
	gen := fs.Int("n", 128, "tg test: generated tokens (0 = skip)")
	depth := fs.Int("d", 0, "run both tests after a context of this many tokens (llama-bench's -d; 0 = empty cache)")
	threads := fs.Int("threads", runtime.NumCPU(), "compute threads")
	fs.IntVar(threads, "t", runtime.NumCPU(), "shorthand for --threads")
	reps := fs.Int("repetitions", 5, "timed runs of each test (after one warm-up)")
	fs.IntVar(reps, "r", 5, "shorthand for --repetitions")
	noBW := fs.Bool("no-bandwidth", false, "skip the memory bandwidth measurement")
	probeEvery := fs.Int("probe-every", 16, "tg test: probe the read bandwidth (a 256 MiB pass, not timed) after every this many decode steps, to take the decode's share of it against the host's bandwidth at the same time (0 = only before and after the tests)")
	var w8 w8a8Flags
	w8.register(fs)
	outType := registerOutputType(fs)
	kvDType := fs.String("kv-cache-dtype", "auto", kvDTypeHelp+"; a comma-separated list runs the tests once per type in this process")
	var sp specFlags
	sp.register(fs, true)
	specPrompt := fs.String("prompt", benchSpecPrompt, "with speculative decoding: the prompt text of the tg test (acceptance depends on the text)")
	temp := fs.Float64("temperature", 0, "with speculative decoding: sampling temperature of the tg test (0 = greedy)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := sp.check(); err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *prompt < 0 || *gen < 0 || *prompt+*gen == 0:
		return usagef("-p and -n must be >= 0 and not both 0")
	case *threads < 1 || *reps < 1:
		return usagef("--threads and --repetitions must be at least 1")
	case *probeEvery < 0:
		return usagef("--probe-every must be >= 0")
	}
	if path == "" {
		if path, err = defaultModel(textLog(stderr)); err != nil {
			return err
		}
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	m := b.Model
	m.Pool = kernels.NewPool(*threads)
	if err := w8.apply(b); err != nil {
		return err
	}
	if err := applyOutputType(b, *outType, w8.log); err != nil {
		return err
	}
	kvTypes := strings.Split(*kvDType, ",")
	for _, s := range kvTypes {
		if err := setKVDType(m, s); err != nil {
			return err
		}
	}
	if sp.on {
		if *gen < 2 {
			return usagef("with speculative decoding -n must be at least 2")
		}
		if b.Tok == nil {
			return fmt.Errorf("%s: the model has no tokenizer (the speculative tg test encodes --prompt)", path)
		}
		return benchLatencySpec(b, &sp, *specPrompt, *gen, *reps, *temp, stdout)
	}
	// The host's bandwidth can change while the tests run (a shared VM): probe it before and
	// after them, and divide by the higher of the two.
	var bwBefore perf.Bandwidth
	if *gen > 0 && !*noBW {
		bwBefore = perf.ReadBandwidth()
	}
	lo := perf.LatencyOptions{Prompt: *prompt, Gen: *gen, Repetitions: *reps, Depth: *depth}
	var pr *perf.Prober
	if *gen > 0 && !*noBW && *probeEvery > 0 {
		pr = perf.NewProber(bwBefore.Threads, pairedProbeBytes, perf.Huge)
		lo.Probe = func() float64 { return pr.Pass(bwBefore.Streams) }
		lo.ProbeEvery = *probeEvery
	}
	runs, err := latencyRuns(m, lo, kvTypes)
	if pr != nil {
		pr.Close() // before the probe after the tests maps its own buffer
	}
	if err != nil {
		return err
	}
	res := runs[len(runs)-1]
	st := perf.Stats(m)
	desc := fmt.Sprintf("%s %s %s", m.Config.Arch, shortParams(st.Params), st.Type)
	fmt.Fprintln(stdout, "| model | size | params | backend | threads | test | t/s |")
	fmt.Fprintln(stdout, "| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------------: | -------------------: |")
	row := func(test string, xs []float64) {
		mean, sd := perf.MeanSD(xs)
		fmt.Fprintf(stdout, "| %-30s | %10s | %10s | %-10s | %7d | %13s | %20s |\n",
			desc, perf.SizeString(st.Bytes), perf.ParamsString(st.Params), "CPU", *threads, test,
			fmt.Sprintf("%.2f ± %.2f", mean, sd))
	}
	for i, s := range kvTypes {
		at := ""
		if *depth > 0 {
			at = fmt.Sprintf(" @ d%d", *depth)
		}
		if t, _ := kernels.ParseKVDType(s); t != kernels.KVF32 || len(kvTypes) > 1 {
			at += " kv " + t.String()
		}
		if *prompt > 0 {
			row(fmt.Sprintf("pp%d%s", *prompt, at), runs[i].PP)
		}
		if *gen > 0 {
			row(fmt.Sprintf("tg%d%s", *gen, at), runs[i].TG)
		}
	}
	fmt.Fprintln(stdout)
	if *gen > 0 {
		tg, _ := perf.MeanSD(res.TG)
		used := float64(st.DecodeBytes) * tg
		ps := perf.StepPercentiles(res.TGSteps, 0, 10, 50, 90, 99, 100)
		fmt.Fprintf(stdout, "decode step times (%d steps): min %.3g ms, p10 %.3g, median %.3g, p90 %.3g, p99 %.3g, max %.3g\n",
			len(res.TGSteps), ms(ps[0]), ms(ps[1]), ms(ps[2]), ms(ps[3]), ms(ps[4]), ms(ps[5]))
		if on := perf.OnCPUSteps(res.TGSteps, res.TGCPU, *threads, 0.95); len(res.TGCPU) > 0 {
			fmt.Fprintf(stdout, "steps with all %d threads on a CPU >= 95%% of the time: %d of %d", *threads, len(on), len(res.TGSteps))
			if len(on) > 0 {
				q := perf.StepPercentiles(on, 50, 90)
				fmt.Fprintf(stdout, ", median %.3g ms, p90 %.3g", ms(q[0]), ms(q[1]))
			}
			if ps[2] < 10*time.Millisecond {
				// The process CPU time behind it is counted in scheduler ticks (a few ms).
				fmt.Fprint(stdout, " (steps this short are below the CPU clock's resolution: not a measure of disturbance)")
			}
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "decode reads %s of weights per token; at %.2f t/s that is %.2f GB/s", perf.SizeString(st.DecodeBytes), tg, used/1e9)
		if *noBW {
			fmt.Fprintln(stdout)
		} else {
			after := perf.MeasureReadBandwidth(bwBefore.Threads, bwBefore.Bytes, bwBefore.Passes, perf.Huge)
			bw := bwBefore
			if after.Median > bw.Median {
				bw = after
			}
			fmt.Fprintf(stdout, " = %.0f%% of the measured read bandwidth %.2f GB/s\n", 100*used/bw.Median, bw.Median/1e9)
			fmt.Fprintf(stdout, "(bandwidth probed before and after the tests: %.2f and %.2f GB/s; the higher is used)\n",
				bwBefore.Median/1e9, after.Median/1e9)
			fmt.Fprintf(stdout, "(bandwidth: median of %d passes over %d MiB of %s memory (%.0f%% on huge pages), %d threads, %s; best pass %.2f GB/s = %.0f%%)\n",
				bw.Passes, bw.Bytes>>20, bw.Pages, 100*float64(bw.HugeBytes)/float64(bw.Bytes), bw.Threads, bw.Method, bw.BytesPerSec/1e9, 100*used/bw.BytesPerSec)
			printPairedShare(stdout, res, float64(st.DecodeBytes), bwBefore.Streams)
		}
	}
	return nil
}

// latencyRuns runs perf.Latency once per KV cache type.
func latencyRuns(m *model.Model, lo perf.LatencyOptions, kvTypes []string) ([]perf.LatencyResult, error) {
	var runs []perf.LatencyResult
	for _, s := range kvTypes {
		if err := setKVDType(m, s); err != nil {
			return nil, err
		}
		res, err := perf.Latency(m, lo)
		if err != nil {
			return nil, err
		}
		runs = append(runs, res)
	}
	return runs, nil
}

// pairedProbeBytes is the size of bench latency's probes between decode steps: a pass takes
// 3-5 ms at this VM's 50-90 GB/s.
const pairedProbeBytes = 256 << 20

// printPairedShare prints the decode's share of the bandwidth probed between its steps
// (perf.PairedShare), window by window.
func printPairedShare(w io.Writer, res perf.LatencyResult, bytesPerStep float64, streams int) {
	ws := res.TGWindows
	if len(ws) == 0 {
		return
	}
	med, all := perf.PairedShare(ws, bytesPerStep)
	probes := slices.Clone(res.TGProbes)
	slices.Sort(probes)
	q := func(f float64) float64 { return probes[int(f*float64(len(probes)-1))] / 1e9 }
	plural := map[bool]string{true: "s"}[streams != 1]
	fmt.Fprintf(w, "decode read %.0f%% of the bandwidth probed between its steps (the median of %d windows of up to %d steps, each window's read rate over the mean of the probes before and after it; over all the windows %.0f%%; %d probes of %d MiB, %d stream%s a thread: min %.1f, median %.1f, max %.1f GB/s)\n",
		100*med, len(ws), ws[0].Steps, 100*all, len(probes), pairedProbeBytes>>20, streams, plural, q(0), q(0.5), q(1))
	if med > 1 {
		fmt.Fprintln(w, "(above 100%: the caches hold some of the weights; the share measures memory only for a model much larger than the last-level cache)")
	}
}

// shortParams is a size label like "110M" or "1.1B".
func shortParams(n int64) string {
	switch {
	case n >= 1e9:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e9), ".0") + "B"
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	default:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
}

// benchNames lists the registered benchmarks.
func benchNames() string {
	names := make([]string, 0, len(benchModes))
	for n := range benchModes {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
