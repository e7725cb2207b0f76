// The perplexity command: llama-perplexity's method on a text file; prints the running
// estimate per chunk and then `PPL = <number>`.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/llmcloud/llmcloud/eval"
	"github.com/llmcloud/llmcloud/loader"
)

func init() {
	register("perplexity", "perplexity of a text file (llama-perplexity's method)", runPerplexity)
}

func runPerplexity(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("perplexity", stderr)
	var mf modelFlags
	mf.register(fs)
	file := fs.String("file", "", "text file to score")
	ctx := fs.Int("ctx", 512, "tokens per chunk (unset: 512, or the model's context length if shorter)")
	chunks := fs.Int("chunks", -1, "score at most this many chunks (-1 = all)")
	klBase := fs.String("kl-base", "", "also report the mean KL divergence of the model's token distributions from this base model's (e.g. the F16 original; any format llmcloud opens)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return usagef("--file is required")
	}
	text, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	if err := mf.useDefault(textLog(stderr)); err != nil {
		return err
	}
	b, err := mf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	if n := b.Model.Config.CtxLen; n > 0 && *ctx > n {
		ctxSet := false
		fs.Visit(func(f *flag.Flag) { ctxSet = ctxSet || f.Name == "ctx" })
		if ctxSet {
			return fmt.Errorf("--ctx %d is longer than the model's context length %d", *ctx, n)
		}
		*ctx = n
	}
	ids := b.Tok.Encode(string(text), true, false)
	if b.Tok.BOS() < 0 || len(ids) == 0 || ids[0] != b.Tok.BOS() {
		return fmt.Errorf("the tokenizer adds no BOS token; llama-perplexity's method needs one")
	}
	fmt.Fprintf(stderr, "%s: %d tokens, %d chunks of %d\n", *file, len(ids), len(ids) / *ctx, *ctx)
	t0 := time.Now()
	if *klBase != "" {
		return perplexityKL(b, *klBase, ids, *ctx, *chunks, t0, stdout, stderr)
	}
	res, err := eval.PerplexityChunks(b.Model, ids, *ctx, *chunks)
	if err != nil {
		return err
	}
	for i, p := range res.Running {
		fmt.Fprintf(stderr, "[%d]%.4f,", i+1, p)
	}
	fmt.Fprintln(stderr)
	fmt.Fprintf(stderr, "scored %d tokens in %.1f s\n", res.Scored, time.Since(t0).Seconds())
	fmt.Fprintf(stdout, "PPL = %.4f +/- %.5f\n", res.PPL, res.Err)
	return nil
}

// perplexityKL scores the model and the base model at path together: perplexity as above, and
// the mean KL divergence KL(P_base || P_model) over the same positions (llama-perplexity
// --kl-divergence's measure).
func perplexityKL(b *loader.Bundle, path string, ids []int, ctx, chunks int, t0 time.Time, stdout, stderr io.Writer) error {
	base, err := loader.Open(path, loader.Options{})
	if err != nil {
		return fmt.Errorf("--kl-base: %w", err)
	}
	defer base.Close()
	res, err := eval.KLDivergence(base.Model, b.Model, ids, ctx, chunks)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "scored %d tokens in %.1f s (both models)\n", res.Scored, time.Since(t0).Seconds())
	fmt.Fprintf(stdout, "PPL = %.4f +/- %.5f\n", res.PPL, res.Err)
	fmt.Fprintf(stdout, "base PPL = %.4f\n", res.BasePPL)
	fmt.Fprintf(stdout, "KLD = %.6f +/- %.6f\n", res.KLD, res.KLDErr)
	fmt.Fprintf(stdout, "same top token = %.3f%%\n", 100*res.Top1)
	return nil
}
