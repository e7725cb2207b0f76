// The `data distill` command: sample whole documents from a model (each started from BOS and
// ended by the model's EOS) through the engine, and write them blank-line separated: training
// text for a student model (package distill; recipes/default made the default model's data so).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/llmcloud/llmcloud/distill"
	"github.com/llmcloud/llmcloud/engine"
)

func runDataDistill(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("data distill", stderr)
	var mf modelFlags
	mf.register(fs)
	o := distill.Options{Engine: engine.DefaultOptions()}
	fs.IntVar(&o.Docs, "docs", 1000, "documents to write")
	fs.Float64Var(&o.Temperature, "temperature", 1.0, "sampling temperature of the teacher")
	fs.Float64Var(&o.TopP, "top-p", 1.0, "nucleus sampling mass of the teacher (1 = off)")
	fs.IntVar(&o.MaxTokens, "max-tokens", 0, "drop a document longer than this many tokens (0 = the model's context)")
	fs.IntVar(&o.InFlight, "in-flight", 64, "documents sampled at once (the engine batches them)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed: document i samples with seed+i")
	fs.Float64Var(&o.MaxRepeat, "max-repeat", 0.2, "drop a document whose 4-gram repetition rate (share of repeated 4-grams of tokens) is above this (0 = keep all)")
	out := fs.String("o", "", "output text file (documents separated by a blank line)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *out == "":
		return usagef("-o is required")
	}
	if err := mf.useDefault(textLog(stderr)); err != nil {
		return err
	}
	o.Engine.Scheduler.MaxNumSeqs = max(o.Engine.Scheduler.MaxNumSeqs, o.InFlight)
	b, err := mf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	t0 := time.Now()
	kept := 0
	st, err := distill.Run(ctx, b.Model, b.Tok, o, func(doc string) error {
		if kept > 0 {
			if _, err := w.WriteString("\n\n"); err != nil {
				return err
			}
		}
		kept++
		if kept%1000 == 0 {
			fmt.Fprintf(stderr, "%d documents (%.0f s)\n", kept, time.Since(t0).Seconds())
		}
		_, err := w.WriteString(doc)
		return err
	})
	interrupted := errors.Is(err, context.Canceled) && ctx.Err() != nil
	if err == nil || interrupted {
		_, err = w.WriteString("\n")
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	if interrupted {
		fmt.Fprintf(stdout, "interrupted: %s holds the %d documents finished so far\n", *out, st.Kept)
	}
	fmt.Fprintf(stdout, "kept %d of %d sampled documents (%d without EOS before the limit, %d over --max-repeat, %d empty)\n",
		st.Kept, st.Sampled, st.DroppedLength, st.DroppedRepeat, st.DroppedEmpty)
	fmt.Fprintf(stdout, "%d tokens kept of %d sampled in %.1f s (%.0f tokens/s)\n", st.KeptTokens, st.AllTokens, secs, float64(st.AllTokens)/secs)
	return nil
}
