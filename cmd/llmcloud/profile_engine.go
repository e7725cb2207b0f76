// `llmcloud profile --engine [MODEL] -o PROFILE.json`: the capacity simulator's step-time
// profile. It runs engine steps of a grid of shapes (prefill tokens, decode sequences, their
// contexts) on the engine's runner (engine.StepTimer) with the engine configuration `serve`
// would use (the same flags and defaults), fits the step-time model of package sim on three
// quarters of the points, reports its error on the held-out quarter, and writes the profile
// JSON (docs/simulate.md).

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/sim"
)

// isEngineProfile reports whether profile's arguments ask for the engine mode, and returns
// them without the --engine flag.
func isEngineProfile(args []string) (bool, []string) {
	for i, a := range args {
		if a == "--engine" || a == "-engine" || a == "--engine=true" {
			return true, append(slices.Clone(args[:i]), args[i+1:]...)
		}
		if a == "--" {
			break
		}
	}
	return false, args
}

func runProfileEngine(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("profile --engine", stderr)
	out := fs.String("o", "", "write the profile JSON to FILE (required)")
	quick := fs.Bool("quick", false, "a small grid and two repetitions (seconds; for tests)")
	reps := fs.Int("reps", 0, "repetitions of each shape (default 5, --quick 2)")
	threads := fs.Int("threads", runtime.NumCPU(), "compute threads (as the replicas will run)")
	sc := engine.DefaultConfig()
	fs.IntVar(&sc.MaxNumSeqs, "max-num-seqs", sc.MaxNumSeqs, "sequences running at most (as serve)")
	fs.IntVar(&sc.MaxNumBatchedTokens, "max-num-batched-tokens", sc.MaxNumBatchedTokens, "token budget of one engine step (as serve)")
	fs.IntVar(&sc.BlockSizeTokens, "block-size", sc.BlockSizeTokens, "KV-cache block size in tokens (as serve)")
	maxLen := fs.Int("max-model-len", 0, "maximum prompt + output tokens (as serve; 0 = the model's context, capped by the KV cache)")
	kvMem := fs.String("kv-cache-memory", "", "KV cache bytes (as serve)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud profile --engine [MODEL] -o PROFILE.json [--quick] [--threads T] [serve's engine flags]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *out == "":
		return usagef("profile --engine needs -o PROFILE.json")
	case *threads < 1:
		return usagef("--threads must be at least 1")
	case *reps < 0:
		return usagef("--reps must be >= 0")
	}
	if *reps == 0 {
		*reps = 5
		if *quick {
			*reps = 2
		}
	}
	var kvBytes int64
	if *kvMem != "" {
		if kvBytes, err = parseBytes(*kvMem); err != nil {
			return usagef("--kv-cache-memory: %v", err)
		}
	}
	b, err := openModelArg(pos, stderr)
	if err != nil {
		return err
	}
	defer b.Close()
	m := b.Model
	m.Pool = kernels.NewPool(*threads)
	if _, err := sizeKV(&sc, &m.Config, m.KVCacheDType, *maxLen, kvBytes, defaultKVBudget()); err != nil {
		return err
	}
	id, err := modelID(b)
	if err != nil {
		return err
	}
	st, err := engine.NewStepTimer(m, sc)
	if err != nil {
		return err
	}
	grid := sim.Grid(sc, *quick)
	fmt.Fprintf(stdout, "%s; %d threads; engine: block %d, max_num_batched_tokens %d, max_num_seqs %d, %d blocks, max_model_len %d\n",
		id, *threads, sc.BlockSizeTokens, sc.MaxNumBatchedTokens, sc.MaxNumSeqs, sc.NumBlocks, sc.MaxModelLenTokens)
	fmt.Fprintf(stdout, "measuring %d step shapes x %d repetitions\n", len(grid), *reps)
	t0 := time.Now()
	pts, err := sim.Measure(st.Run, grid, *reps, 8)
	if err != nil {
		return err
	}
	train, held := sim.Split(pts)
	coef, err := sim.Fit(train)
	if err != nil {
		return err
	}
	p := &sim.Profile{Version: sim.ProfileVersion, Date: time.Now().UTC().Format(time.RFC3339), Model: id, CPU: sim.ThisCPU(),
		Threads: *threads, Engine: sim.FromEngine(sc), Reps: *reps, Points: pts,
		Train: sim.Errors(coef, train), HeldOut: sim.Errors(coef, held)}
	p.SetCoefficients(coef)
	if err := p.Save(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "measured in %.1f s\n", time.Since(t0).Seconds())
	printProfileFit(stdout, p)
	fmt.Fprintf(stderr, "saved %s\n", *out)
	return nil
}

// printProfileFit prints the coefficients and the fit's error per phase.
func printProfileFit(w io.Writer, p *sim.Profile) {
	fmt.Fprintln(w, "step time = const + prefill_token*P + prefill_attn_pair*sum(chunk*(ctx+chunk/2)) + decode_seq*D + decode_kv_token*sum(ctx)")
	fmt.Fprintln(w, "            + decode_kv_cold_token*max(0, sum(ctx) - decode_kv_cold_from)   (KV rows past the caches; 0: none)")
	for _, n := range sim.CoefNames {
		fmt.Fprintf(w, "  %-26s %.4g\n", n, p.Coefficients[n])
	}
	fmt.Fprintf(w, "%-8s %14s %14s %14s\n", "phase", "points fit/held", "held mean err", "held max err")
	for _, ph := range []string{"decode", "prefill", "mixed", "all"} {
		h, ok := p.HeldOut[ph]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%-8s %7d/%-7d %13.1f%% %13.1f%%\n", ph, p.Train[ph].Points, h.Points, 100*h.MeanRel, 100*h.MaxRel)
	}
}

// modelID identifies the model of b: its file (hashed when under 1 GiB), architecture and
// dtype.
func modelID(b *loader.Bundle) (sim.ModelID, error) {
	id := sim.ModelID{File: filepath.Base(b.Path), Arch: b.Model.Config.Arch, KV: b.Model.KVCacheDType.String(), DType: string(b.Format)}
	for _, kv := range b.Meta {
		if kv.Key == "general.file_type" {
			id.DType = fmt.Sprintf("file_type %v", kv.Value.V)
		}
	}
	fi, err := os.Stat(b.Path)
	if err != nil {
		return id, err
	}
	id.Size = fi.Size()
	if fi.Mode().IsRegular() && fi.Size() < 1<<30 {
		f, err := os.Open(b.Path)
		if err != nil {
			return id, err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return id, err
		}
		id.SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return id, nil
}
