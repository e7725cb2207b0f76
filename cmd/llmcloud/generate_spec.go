// `generate` with speculative decoding: the single-sequence generate package has no
// verification step, so the request runs through a one-sequence engine with the proposer —
// the serving path, with the same prompt, sampling, stop strings and token limit — and the
// same timings are printed.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/generate"
	"github.com/llmcloud/llmcloud/loader"
)

func generateSpec(ctx context.Context, b *loader.Bundle, ids []int, opts generate.Options, sp *specFlags, stdout, stderr io.Writer) error {
	m := b.Model
	maxLen := len(ids) + opts.MaxTokens
	if ctxLen := m.Config.CtxLen; ctxLen > 0 {
		maxLen = min(maxLen, ctxLen)
	}
	if len(ids) >= maxLen {
		return fmt.Errorf("generate: prompt of %d tokens does not fit the context length %d (leave room for at least one new token)", len(ids), maxLen)
	}
	so, release, err := sp.build(b, maxLen, maxLen+sp.cfg.NumTokens+32, false)
	if err != nil {
		return err
	}
	defer release()
	eng, err := oneSeqEngine(b, maxLen, &so)
	if err != nil {
		return err
	}
	defer eng.Shutdown(context.Background())
	out, err := eng.Add(ctx, engine.Request{ID: "generate", Prompt: ids, Params: opts.Sample,
		MaxTokens: opts.MaxTokens, Stop: opts.Stop, StopTokenIDs: opts.StopTokenIDs, IgnoreEOS: opts.IgnoreEOS})
	if err != nil {
		return err
	}
	res := generate.Result{PromptTokens: len(ids)}
	var last engine.Output
	for o := range out {
		fmt.Fprint(stdout, o.Text)
		res.IDs = append(res.IDs, o.TokenIDs...)
		last = o
	}
	fmt.Fprintln(stdout)
	if last.Err != nil {
		return last.Err
	}
	res.FinishReason = last.FinishReason
	mt := last.Metrics
	res.PrefillTime = since(mt.FirstScheduled, mt.FirstToken)
	res.DecodeTime = since(mt.FirstToken, mt.LastToken)
	printTimings(stderr, res)
	fmt.Fprintf(stderr, "speculative decoding: %s: %s\n", sp.describe(), specSummary(eng.Stats().Spec))
	return nil
}

// since is b-a, or 0 when either is unset.
func since(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return b.Sub(a)
}

// oneSeqEngine is an engine for one sequence of up to maxLen tokens, with speculative
// decoding when so is not nil.
func oneSeqEngine(b *loader.Bundle, maxLen int, so *engine.SpecOptions) (*engine.Engine, error) {
	m := b.Model
	eo := engine.DefaultOptions()
	sc := &eo.Scheduler
	sc.MaxNumSeqs = 1
	sc.MaxModelLenTokens = maxLen
	bs := sc.BlockSizeTokens
	slack := 2 * bs
	if so != nil {
		slack += so.NumTokens // room for the drafts being verified
		if err := useSpec(&eo, *so); err != nil {
			return nil, err
		}
	}
	eo.KVCacheBytes = int64((maxLen+slack+bs-1)/bs*bs) * m.KVBytesPerTokenCache()
	return engine.New(m, b.Tok, eo)
}
