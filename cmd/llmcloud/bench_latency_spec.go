// `bench latency` with speculative decoding: single-stream decode speed with and without the
// proposer, side by side in one run. Both run one sequence through the serving engine (the
// path speculation lives on), alternating repetitions so that a noisy shared machine slows
// both alike; a real text prompt is used because acceptance depends on the text.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/perf"
	"github.com/llmcloud/llmcloud/sample"
)

// benchSpecPrompt is the default prompt of the speculative latency test.
const benchSpecPrompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her dog."

// benchLatencySpec measures decode tokens/s of gen tokens after prompt, reps times each way.
func benchLatencySpec(b *loader.Bundle, sp *specFlags, prompt string, gen, reps int, temp float64, stdout io.Writer) error {
	ids := b.Tok.Encode(prompt, true, false)
	maxLen := len(ids) + gen
	if ctx := b.Model.Config.CtxLen; ctx > 0 && maxLen > ctx {
		return usagef("prompt (%d tokens) + -n %d is over the model's context length %d", len(ids), gen, ctx)
	}
	so, release, err := sp.build(b, maxLen, maxLen+sp.cfg.NumTokens+32, false)
	if err != nil {
		return err
	}
	defer release()
	plain, err := oneSeqEngine(b, maxLen, nil)
	if err != nil {
		return err
	}
	defer plain.Shutdown(context.Background())
	specEng, err := oneSeqEngine(b, maxLen, &so)
	if err != nil {
		return err
	}
	defer specEng.Shutdown(context.Background())
	params := sample.Params{Temperature: temp, Seed: 1}
	var off, on []float64
	for r := -1; r < reps; r++ { // r == -1: warm-up
		a, err := engineDecode(plain, ids, gen, params)
		if err != nil {
			return err
		}
		s, err := engineDecode(specEng, ids, gen, params)
		if err != nil {
			return err
		}
		if r >= 0 {
			off, on = append(off, a), append(on, s)
		}
	}
	mOff, sdOff := perf.MeanSD(off)
	mOn, sdOn := perf.MeanSD(on)
	fmt.Fprintf(stdout, "| speculative decoding | prompt | test | t/s |\n| --- | ---: | ---: | ---: |\n")
	fmt.Fprintf(stdout, "| off | %d | tg%d | %.2f ± %.2f |\n", len(ids), gen, mOff, sdOff)
	fmt.Fprintf(stdout, "| %s | %d | tg%d | %.2f ± %.2f |\n", sp.describe(), len(ids), gen, mOn, sdOn)
	fmt.Fprintf(stdout, "\nspeed-up %.2fx (decode through the engine, one sequence, temperature %g, %d alternating repetitions after a warm-up)\n",
		mOn/mOff, temp, reps)
	fmt.Fprintf(stdout, "speculation (all runs): %s\n", specSummary(specEng.Stats().Spec))
	return nil
}

// engineDecode runs one request of gen tokens (EOS ignored) and returns its decode tokens/s
// (the tokens after the first over the time from the first to the last).
func engineDecode(eng *engine.Engine, ids []int, gen int, params sample.Params) (float64, error) {
	out, err := eng.Add(context.Background(), engine.Request{ID: "bench", Prompt: ids, Params: params, MaxTokens: gen, IgnoreEOS: true})
	if err != nil {
		return 0, err
	}
	var last engine.Output
	for o := range out {
		last = o
	}
	if last.Err != nil {
		return 0, last.Err
	}
	d := since(last.Metrics.FirstToken, last.Metrics.LastToken)
	if last.OutputTokens < 2 || d <= 0 {
		return 0, fmt.Errorf("bench latency: %d tokens generated, too few to time", last.OutputTokens)
	}
	return float64(last.OutputTokens-1) / d.Seconds(), nil
}
