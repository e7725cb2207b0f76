// The profile command: llmcloud profile [MODEL] [-p N] [-n N] [--trace FILE.json]
// [--threads T] runs a prefill of -p tokens and -n decode steps of MODEL (anything `llmcloud
// inspect` accepts; none: the built-in default model) with every op timed on every worker
// (graph/exec's profiling), and prints for prefill and decode a table of the ops (calls, self
// time, share, GB/s and GFLOP/s achieved, package profile), the measured step times, and how
// much of the step time the ops' self times account for. --trace writes the Chrome
// trace-event JSON that https://ui.perfetto.dev opens.
package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/profile"
)

func init() {
	register("profile", "run a prefill and decode steps with every op timed: per-op table (key_averages style) and a Perfetto trace (--trace)", runProfile)
}

// coverageTolerance is how far the ops' self times may be from the step time (acceptance:
// within 5%).
const coverageTolerance = 0.05

func runProfile(args []string, stdout, stderr io.Writer) error {
	if ok, rest := isEngineProfile(args); ok {
		return runProfileEngine(rest, stdout, stderr) // profile_engine.go
	}
	fs := newFlags("profile", stderr)
	prompt := fs.Int("p", 128, "prompt tokens of the prefill (one step)")
	gen := fs.Int("n", 32, "decode steps after the prefill")
	tracePath := fs.String("trace", "", "write the Chrome trace-event JSON into FILE (open it in https://ui.perfetto.dev)")
	threads := fs.Int("threads", runtime.NumCPU(), "compute threads (worker pool size)")
	fs.IntVar(threads, "t", runtime.NumCPU(), "shorthand for --threads")
	var kvDType string
	registerKVDType(fs, &kvDType)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud profile [MODEL] [-p N] [-n N] [--trace FILE.json] [--threads T] [--kv-cache-dtype T]")
		fmt.Fprintln(stderr, "MODEL: a GGUF file, a Hugging Face directory or a llama2.c .bin (default: the built-in default model)")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *prompt < 1 || *gen < 0:
		return usagef("-p must be at least 1 and -n at least 0")
	case *threads < 1:
		return usagef("--threads must be at least 1")
	}
	b, err := openModelArg(pos, stderr)
	if err != nil {
		return err
	}
	defer b.Close()
	m := b.Model
	m.Pool = kernels.NewPool(*threads)
	if err := setKVDType(m, kvDType); err != nil {
		return err
	}
	c := m.Config
	if *prompt+*gen > c.CtxLen && c.CtxLen > 0 {
		return usagef("-p %d plus -n %d exceed the model's context of %d", *prompt, *gen, c.CtxLen)
	}
	fmt.Fprintf(stdout, "%s: %s, dim %d, %d layers, ffn %d, vocab %d; %d threads; KV %s; prefill %d tokens, %d decode steps\n",
		b.Path, c.Arch, c.Dim, c.Layers, c.FFN, c.Vocab, *threads, m.KVCacheDType, *prompt, *gen)

	run, err := newProfileRun(m, *prompt+*gen)
	if err != nil {
		return err
	}
	// Warm-up, unprofiled: compile, grow the buffers, touch the weights.
	if err := run.steps(nil, *prompt, min(*gen, 2)); err != nil {
		return err
	}
	rec := profile.New()
	if err := run.steps(rec, *prompt, *gen); err != nil {
		return err
	}
	for _, ph := range run.phases {
		if ph.steps == 0 {
			continue
		}
		tab := profile.Summarize(rec.Tracks(), func(_ *profile.Track, s profile.Slice) bool {
			return s.Cat == "op" && s.Start >= ph.from && s.End() <= ph.to
		})
		per := ph.time / time.Duration(ph.steps)
		fmt.Fprintf(stdout, "\n%s: %d step(s) of %d token(s), %.3f ms per step (%.1f tokens/s)\n", ph.name, ph.steps,
			ph.tokens/ph.steps, float64(per.Nanoseconds())/1e6, float64(ph.tokens)/ph.time.Seconds())
		if err := tab.Write(stdout); err != nil {
			return err
		}
		cov := float64(tab.Self) / float64(ph.time)
		verdict := "within"
		if cov < 1-coverageTolerance || cov > 1+coverageTolerance {
			verdict = "NOT within"
		}
		fmt.Fprintf(stdout, "%s: ops' self time %.3f ms of measured step time %.3f ms = %.1f%% (%s %.0f%%; the rest is the executor between ops and profiling overhead)\n",
			ph.name, float64(tab.Self.Nanoseconds())/1e6, float64(ph.time.Nanoseconds())/1e6, 100*cov, verdict, 100*coverageTolerance)
		measureWorkerUse(rec.Tracks(), *threads, ph.from, ph.to).write(stdout, ph.name, ph.time)
	}
	if *tracePath != "" {
		if err := rec.WriteTraceFile(*tracePath); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwrote the trace into %s (open it in https://ui.perfetto.dev)\n", *tracePath)
	}
	return nil
}

// profileRun drives one sequence through the model's batched forward.
type profileRun struct {
	m      *model.Model
	kv     *model.PagedKV
	table  []int32
	b      model.Batch
	phases []profilePhase
}

// profilePhase is prefill's or decode's measurement: the steps' summed wall time and the
// window [from, to) of the recorder's clock they ran in.
type profilePhase struct {
	name          string
	steps, tokens int
	time          time.Duration
	from, to      time.Duration
}

const profileBlock = 16

func newProfileRun(m *model.Model, positions int) (*profileRun, error) {
	blocks := (positions + profileBlock - 1) / profileBlock
	kv, err := m.NewPagedKV(blocks, profileBlock)
	if err != nil {
		return nil, err
	}
	r := &profileRun{m: m, kv: kv}
	for i := range blocks {
		r.table = append(r.table, int32(i))
	}
	return r, nil
}

// steps runs a prefill of p tokens from position 0 and then n decode steps, greedy, with rec
// recording (nil: none).
func (r *profileRun) steps(rec *profile.Recorder, p, n int) error {
	r.b.Recorder = rec
	defer func() { r.b.Recorder = nil }()
	V := r.m.Config.Vocab
	toks := make([]int, p)
	for i := range toks {
		toks[i] = (i*7919 + 1) % V
	}
	r.phases = []profilePhase{{name: "prefill"}, {name: "decode"}}
	var stepTrack *profile.Track
	if rec != nil {
		stepTrack = rec.Track("llmcloud profile", "steps")
	}
	posNext := 0
	for step := 0; step <= n; step++ {
		ph := &r.phases[min(step, 1)]
		seq := model.BatchSeq{Tokens: toks, StartPos: posNext, BlockTable: r.table, NeedsLogits: true}
		t0 := time.Now()
		logits, err := r.m.ForwardBatch(&r.b, r.kv, []model.BatchSeq{seq})
		t1 := time.Now()
		if err != nil {
			return err
		}
		next := argmaxF32(logits[:V])
		t2 := time.Now()
		posNext += len(toks)
		if ph.steps == 0 && rec != nil {
			ph.from = t0.Sub(rec.Start())
		}
		ph.steps++
		ph.tokens += len(toks)
		ph.time += t1.Sub(t0)
		if rec != nil {
			ph.to = t1.Sub(rec.Start())
			stepTrack.Span(ph.name, "step", t0, t1, map[string]any{"tokens": len(toks), "pos": seq.StartPos})
			stepTrack.Span("sample", "step", t1, t2, nil)
		}
		toks = []int{next}
	}
	return nil
}

func argmaxF32(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
