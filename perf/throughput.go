// This file implements the offline throughput benchmark (`llmcloud bench throughput`, like
// `vllm bench throughput`): N random prompts of I tokens, each asking for exactly O tokens
// (EOS ignored), are all submitted at once to an engine.Engine, and the run is timed from the
// first submission to the last finished request. Besides vLLM's three rates it reports the
// decode rate of the steps that ran decodes only (no prompt chunk), from the engine's per-step
// hook.
package perf

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// ThroughputOptions configures a throughput run.
type ThroughputOptions struct {
	NumPrompts  int
	InputLen    int     // prompt tokens per request, after the shared prefix
	PrefixLen   int     // tokens of one random prefix that every prompt starts with (0 = none)
	OutputLen   int     // generated tokens per request (EOS ignored)
	Temperature float64 // sampling temperature (vLLM's benchmark uses 1.0); 0 = greedy
	Seed        uint64  // prompts and sampling seeds
	Engine      engine.Options
	// Adapters, when not empty, spreads the requests over run-time LoRA adapters: request i
	// uses Adapters[i%len(Adapters)] (ids in Engine.LoRA; 0 is the base model).
	Adapters []uint32
}

// ThroughputResult is the run's outcome; the JSON keys of the first group are vLLM's.
type ThroughputResult struct {
	ElapsedSeconds        float64 `json:"elapsed_time"`
	NumRequests           int     `json:"num_requests"`
	TotalNumTokens        int64   `json:"total_num_tokens"`
	RequestsPerSecond     float64 `json:"requests_per_second"`
	TokensPerSecond       float64 `json:"tokens_per_second"`
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"`

	TotalOutputTokens     int64   `json:"total_output_tokens"`
	DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"` // decode-only steps
	DecodeSteps           int64   `json:"decode_steps"`
	MeanDecodeBatch       float64 `json:"mean_decode_batch"`
	Steps                 int64   `json:"steps"`
	Preemptions           int64   `json:"preemptions"`
	PrefixHitTokens       int64   `json:"prefix_hit_tokens"`
	PrefillTokens         int64   `json:"prefill_tokens"`
	MeanTTFTSeconds       float64 `json:"mean_ttft_s"`
	NumBlocks             int     `json:"num_kv_blocks"`
	BlockSize             int     `json:"block_size"`
	MaxNumSeqs            int     `json:"max_num_seqs"`
	MaxNumBatchedTokens   int     `json:"max_num_batched_tokens"`
	BatchInvariant        bool    `json:"batch_invariant"`
	ForwardSeconds        float64 `json:"forward_s"`
	SampleSeconds         float64 `json:"sample_s"`

	// Speculative decoding (zero when off): vLLM's spec_decode counters and the share of
	// draft tokens accepted, overall and by draft position.
	SpecDrafts         int64     `json:"spec_num_drafts,omitempty"`
	SpecDraftTokens    int64     `json:"spec_num_draft_tokens,omitempty"`
	SpecAcceptedTokens int64     `json:"spec_num_accepted_tokens,omitempty"`
	SpecAcceptedPerPos []int64   `json:"spec_num_accepted_tokens_per_pos,omitempty"`
	SpecAcceptanceRate float64   `json:"spec_acceptance_rate,omitempty"`
	SpecMeanAccepted   float64   `json:"spec_mean_acceptance_length,omitempty"` // tokens per verification, the bonus included
	SpecPosRate        []float64 `json:"spec_acceptance_rate_per_pos,omitempty"`
}

// RandomPrompts returns n prompts of length tokens each, drawn uniformly from the vocabulary
// without special (end-of-generation) ids.
func RandomPrompts(vocab int, tok *tokenizer.Tokenizer, n, length int, seed uint64) [][]int {
	r := rand.New(rand.NewPCG(seed, 0x7468726f))
	out := make([][]int, n)
	for i := range out {
		p := make([]int, length)
		for j := range p {
			for {
				p[j] = r.IntN(vocab)
				if tok == nil || !tok.IsEOG(p[j]) {
					break
				}
			}
		}
		out[i] = p
	}
	return out
}

// Throughput runs the benchmark on m (with m.Pool).
func Throughput(m *model.Model, tok *tokenizer.Tokenizer, o ThroughputOptions) (ThroughputResult, error) {
	var res ThroughputResult
	if o.NumPrompts < 1 || o.InputLen < 1 || o.OutputLen < 1 || o.PrefixLen < 0 {
		return res, fmt.Errorf("throughput: need at least one prompt, one input and one output token")
	}
	eo := o.Engine
	if eo.Scheduler.MaxModelLenTokens == 0 {
		eo.Scheduler.MaxModelLenTokens = max(m.Config.CtxLen, o.PrefixLen+o.InputLen+o.OutputLen)
	}
	var mu sync.Mutex
	var decodeTime time.Duration
	var decodeTokens, decodeSteps int64
	var fwd, smp time.Duration
	user := eo.OnStep
	eo.OnStep = func(s engine.StepMetrics) {
		mu.Lock()
		fwd += s.Forward
		smp += s.Sample
		if s.PrefillTokens == 0 && s.NumTokens > 0 {
			decodeTime += s.Total
			decodeTokens += int64(s.NumTokens)
			decodeSteps++
		}
		mu.Unlock()
		if user != nil {
			user(s)
		}
	}
	e, err := engine.New(m, tok, eo)
	if err != nil {
		return res, err
	}
	defer e.Shutdown(context.Background())
	prompts := RandomPrompts(m.Config.Vocab, tok, o.NumPrompts, o.InputLen, o.Seed)
	if o.PrefixLen > 0 {
		prefix := RandomPrompts(m.Config.Vocab, tok, 1, o.PrefixLen, o.Seed^0x70726566)[0]
		for i, p := range prompts {
			prompts[i] = append(append(make([]int, 0, len(prefix)+len(p)), prefix...), p...)
		}
	}
	t0 := time.Now()
	chans := make([]<-chan engine.Output, len(prompts))
	for i, p := range prompts {
		params := sample.Params{Temperature: o.Temperature, Seed: o.Seed + uint64(i)}
		r := engine.Request{ID: fmt.Sprint(i), Prompt: p, Params: params, MaxTokens: o.OutputLen, IgnoreEOS: true}
		if len(o.Adapters) > 0 {
			r.Adapter = o.Adapters[i%len(o.Adapters)]
		}
		ch, err := e.Add(context.Background(), r)
		if err != nil {
			return res, err
		}
		chans[i] = ch
	}
	var outTokens int64
	var ttft time.Duration
	for _, ch := range chans {
		for out := range ch {
			if out.Finished {
				if out.Err != nil {
					return res, out.Err
				}
				outTokens += int64(out.OutputTokens)
				ttft += out.Metrics.TTFT()
			}
		}
	}
	elapsed := time.Since(t0).Seconds()
	st := e.Stats()
	cfg := e.Config()
	mu.Lock()
	defer mu.Unlock()
	res = ThroughputResult{
		ElapsedSeconds: elapsed, NumRequests: len(prompts),
		TotalNumTokens:    int64(o.NumPrompts*(o.PrefixLen+o.InputLen)) + outTokens,
		TotalOutputTokens: outTokens,
		DecodeSteps:       decodeSteps, Steps: st.Steps, Preemptions: st.Preemptions,
		PrefixHitTokens: st.PrefixHitTokens, PrefillTokens: st.PrefillTokens,
		MeanTTFTSeconds: ttft.Seconds() / float64(len(prompts)),
		NumBlocks:       cfg.NumBlocks, BlockSize: cfg.BlockSizeTokens, MaxNumSeqs: cfg.MaxNumSeqs,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens, BatchInvariant: eo.BatchInvariant,
		ForwardSeconds: fwd.Seconds(), SampleSeconds: smp.Seconds(),
	}
	res.RequestsPerSecond = float64(res.NumRequests) / elapsed
	res.TokensPerSecond = float64(res.TotalNumTokens) / elapsed
	res.OutputTokensPerSecond = float64(outTokens) / elapsed
	if sp := st.Spec; sp.Drafts > 0 {
		res.SpecDrafts, res.SpecDraftTokens, res.SpecAcceptedTokens = sp.Drafts, sp.DraftTokens, sp.AcceptedTokens
		res.SpecAcceptedPerPos = append([]int64(nil), sp.AcceptedPerPos...)
		if sp.DraftTokens > 0 {
			res.SpecAcceptanceRate = float64(sp.AcceptedTokens) / float64(sp.DraftTokens)
		}
		res.SpecMeanAccepted = 1 + float64(sp.AcceptedTokens)/float64(sp.Drafts)
		for _, a := range sp.AcceptedPerPos {
			res.SpecPosRate = append(res.SpecPosRate, float64(a)/float64(sp.Drafts))
		}
	}
	if decodeTime > 0 {
		res.DecodeTokensPerSecond = float64(decodeTokens) / decodeTime.Seconds()
		res.MeanDecodeBatch = float64(decodeTokens) / float64(decodeSteps)
	}
	return res, nil
}
