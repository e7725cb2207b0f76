// The generation path both endpoints share: request fields to sample.Params (validated, with
// the model's defaults for absent fields), one engine request per (prompt, n) choice, and a
// merged stream of the choices' Outputs. Metrics and the per-request log line are recorded
// here, as each choice's Outputs pass through.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/sample"
)

// genRequest is a validated generation request: one or more prompts, n choices each.
type genRequest struct {
	kind      string // "cmpl" or "chatcmpl": the id prefix and log field
	prompts   [][]int
	n         int
	maxTokens int // 0 = up to max-model-len
	// maxTokensParam names the request field maxTokens came from ("" for a model default): a
	// prompt that fits but leaves too little room for maxTokens is blamed on it.
	maxTokensParam string
	// promptParam names the field the prompts came from ("prompt", "messages", "input").
	promptParam string
	cacheSalt   string
	adapter     uint32 // the run-time LoRA adapter the request's model names (0: the base)
	params      sample.Params
	seedSet     bool
	stop        []string
	stopIDs     []int
	ignoreEOS   bool
	user        string
	// constraint, if set, makes each choice's engine.Request.Constraint (a grammar).
	constraint func() engine.Constraint
}

// choiceOutput is one Output of choice index (prompt*n + i).
type choiceOutput struct {
	index int
	out   engine.Output
}

// buildGen validates the shared sampling fields. maxTokens is the caller's max-tokens field
// (chat: max_completion_tokens first); topLogprobs < 0 means no logprobs.
func (s *Server) buildGen(st *state, f *api.SamplingFields, maxTokens *int, maxTokensParam string, logprobs bool, topLogprobs int) (*genRequest, *apiError) {
	d := st.b.Defaults
	useDef := s.opts.UseModelDefaults
	p := sample.Params{Temperature: 1, TopP: 1, RepetitionPenalty: 1} // OpenAI's and vLLM's
	if useDef {
		p = d.Params() // the model's, else temperature 0.8 and top-p 0.95
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	if v := f.Temperature; v != nil {
		if bad(*v) || *v < 0 || *v > 100 {
			return nil, badRequest("temperature", "temperature must be in [0, 100], got %v", *v)
		}
		p.Temperature = *v
	}
	if v := f.TopP; v != nil {
		if bad(*v) || *v <= 0 || *v > 1 {
			return nil, badRequest("top_p", "top_p must be in (0, 1], got %v", *v)
		}
		p.TopP = *v
	}
	if v := f.TopK; v != nil {
		if *v < -1 {
			return nil, badRequest("top_k", "top_k must be -1 (off), 0 (off) or positive, got %d", *v)
		}
		p.TopK = max(*v, 0)
	}
	if v := f.MinP; v != nil {
		if bad(*v) || *v < 0 || *v > 1 {
			return nil, badRequest("min_p", "min_p must be in [0, 1], got %v", *v)
		}
		p.MinP = *v
	}
	if v := f.PresencePenalty; v != nil {
		if bad(*v) || *v < -2 || *v > 2 {
			return nil, badRequest("presence_penalty", "presence_penalty must be in [-2, 2], got %v", *v)
		}
		p.PresencePenalty = *v
	}
	if v := f.FrequencyPenalty; v != nil {
		if bad(*v) || *v < -2 || *v > 2 {
			return nil, badRequest("frequency_penalty", "frequency_penalty must be in [-2, 2], got %v", *v)
		}
		p.FrequencyPenalty = *v
	}
	if v := f.RepetitionPenalty; v != nil {
		if bad(*v) || *v <= 0 || *v > 100 {
			return nil, badRequest("repetition_penalty", "repetition_penalty must be in (0, 100], got %v", *v)
		}
		p.RepetitionPenalty = *v
	}
	vocab := st.b.Model.Config.Vocab
	if len(f.LogitBias) > 0 {
		p.LogitBias = map[int]float64{}
		for k, v := range f.LogitBias {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 || id >= vocab {
				return nil, badRequest("logit_bias", "logit_bias key %q is not a token id in [0, %d)", k, vocab)
			}
			if bad(v) || v < -100 || v > 100 {
				return nil, badRequest("logit_bias", "logit_bias value for token %d must be in [-100, 100], got %v", id, v)
			}
			p.LogitBias[id] = v
		}
	}
	if f.StreamOptions != nil && !f.Stream {
		return nil, badRequest("stream_options", "stream_options is only allowed when stream is true")
	}
	g := &genRequest{n: 1, ignoreEOS: f.IgnoreEOS, user: f.User, cacheSalt: f.CacheSalt}
	if f.N != nil {
		if *f.N < 1 || *f.N > s.opts.MaxN {
			return nil, badRequest("n", "n must be in [1, %d], got %d", s.opts.MaxN, *f.N)
		}
		g.n = *f.N
	}
	if f.Seed != nil {
		p.Seed = uint64(*f.Seed)
		g.seedSet = true
	} else {
		p.Seed = s.randomSeed()
	}
	if maxTokens != nil {
		if *maxTokens < 1 {
			return nil, badRequest(maxTokensParam, "%s must be at least 1, got %d", maxTokensParam, *maxTokens)
		}
		g.maxTokens = *maxTokens
		g.maxTokensParam = maxTokensParam
	} else if useDef && d.MaxNewTokens != nil && *d.MaxNewTokens > 0 {
		g.maxTokens = *d.MaxNewTokens
	}
	stop, err := api.Stops(f.Stop)
	if err != nil {
		return nil, badRequest("stop", "%v", err)
	}
	g.stop = stop
	for _, id := range f.StopTokenIDs {
		if id < 0 || id >= vocab {
			return nil, badRequest("stop_token_ids", "stop_token_ids: %d is not a token id in [0, %d)", id, vocab)
		}
	}
	g.stopIDs = f.StopTokenIDs
	if topLogprobs > 20 {
		return nil, badRequest("logprobs", "at most 20 top logprobs, got %d", topLogprobs)
	}
	if topLogprobs < 0 {
		return nil, badRequest("logprobs", "top logprobs must not be negative, got %d", topLogprobs)
	}
	p.Logprobs = logprobs
	p.TopLogprobs = topLogprobs
	g.params = p
	return g, nil
}

// maxChoices bounds prompts x n of one request.
const maxChoices = 256

// checkPrompts validates prompt token ids and lengths against max-model-len.
func (g *genRequest) checkPrompts(st *state, param string) *apiError {
	vocab := st.b.Model.Config.Vocab
	limit := st.maxModelLen
	g.promptParam = param
	if len(g.prompts)*g.n > maxChoices {
		return badRequest(param, "%d prompts x n=%d is more than %d choices in one request", len(g.prompts), g.n, maxChoices)
	}
	for _, ids := range g.prompts {
		if len(ids) == 0 {
			return badRequest(param, "%s is empty (no tokens)", param)
		}
		for _, id := range ids {
			if id < 0 || id >= vocab {
				return badRequest(param, "%s: token id %d is outside the vocabulary [0, %d)", param, id, vocab)
			}
		}
		if len(ids) >= limit {
			return badRequest(param, "the prompt is %d tokens, %d tokens over the limit: max-model-len is %d and leaves room for at least one generated token",
				len(ids), len(ids)-limit+1, limit)
		}
		// maxTokens > limit-len(ids), not len(ids)+maxTokens > limit: a max_tokens near 2^63
		// must not wrap around and pass.
		if g.maxTokens > 0 && g.maxTokens > limit-len(ids) {
			blame := param
			if g.maxTokensParam != "" {
				blame = g.maxTokensParam
			}
			return badRequest(blame, "the prompt (%d tokens) plus %s (%d) is %d tokens over max-model-len %d",
				len(ids), blame, g.maxTokens, g.maxTokens-(limit-len(ids)), limit)
		}
	}
	return nil
}

// start adds every choice to the engine and returns the merged stream; it ends (is closed)
// after every choice's final Output. On error nothing stays running.
func (s *Server) start(ctx context.Context, st *state, g *genRequest, id string) (<-chan choiceOutput, *apiError) {
	total := len(g.prompts) * g.n
	ctx, cancel := context.WithCancel(ctx)
	merged := make(chan choiceOutput, 16*total)
	var chans []<-chan engine.Output
	for pi, prompt := range g.prompts {
		for i := range g.n {
			p := g.params
			if g.seedSet {
				p.Seed += uint64(i)
			} else if pi*g.n+i > 0 {
				p.Seed = s.randomSeed()
			}
			r := engine.Request{ID: fmt.Sprintf("%s-%d", id, pi*g.n+i), Prompt: prompt, Params: p, CacheSalt: g.cacheSalt, Adapter: g.adapter,
				MaxTokens: g.maxTokens, Stop: g.stop, StopTokenIDs: g.stopIDs, IgnoreEOS: g.ignoreEOS}
			if g.constraint != nil {
				r.Constraint = g.constraint()
			}
			if s.opts.KVImport != nil && i == 0 { // the other choices find the rows in the prefix cache
				r.ImportKV = s.opts.KVImport(ctx, prompt, g.cacheSalt, g.adapter)
			}
			r.HoldKV = s.opts.KVHold != nil && i == 0 && s.opts.KVHold(ctx)
			ch, err := st.eng.Add(ctx, r)
			if err != nil {
				cancel()
				for _, c := range chans { // drain the ones already running
					for range c {
					}
				}
				return nil, addError(err, g.promptParam, s.opts.RetryAfter)
			}
			chans = append(chans, ch)
		}
	}
	var wg sync.WaitGroup
	for idx, ch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.forward(ctx, idx, ch, merged, g, id)
		}()
	}
	go func() {
		wg.Wait()
		cancel()
		close(merged)
	}()
	return merged, nil
}

// forward passes one choice's Outputs on, recording metrics and the request's log line.
func (s *Server) forward(ctx context.Context, idx int, ch <-chan engine.Output, merged chan<- choiceOutput, g *genRequest, id string) {
	var last time.Time
	for o := range ch {
		if n := len(o.TokenIDs); n > 0 {
			mt := o.Metrics
			switch {
			case last.IsZero() && n > 1:
				s.metrics.observeTokens(n-1, mt.LastToken.Sub(mt.FirstToken).Seconds())
			case !last.IsZero():
				s.metrics.observeTokens(n, mt.LastToken.Sub(last).Seconds())
			}
			last = mt.LastToken
		}
		if o.Finished {
			s.metrics.observeFinished(o)
			if len(g.prompts)*g.n == 1 {
				s.trace(id, o) // the id the client saw
			} else {
				s.trace(o.ID, o) // one per choice
			}
			if s.opts.LogRequests || o.Err != nil {
				mt := o.Metrics
				attrs := []any{"id", o.ID, "request_id", requestID(ctx), "kind", g.kind, "prompt_tokens", o.PromptTokens,
					"output_tokens", o.OutputTokens, "cached_tokens", o.CachedTokens,
					"ttft", mt.TTFT(), "duration", mt.Finished.Sub(mt.Arrival), "finish_reason", o.FinishReason}
				if o.Err != nil {
					attrs = append(attrs, "err", o.Err)
				}
				if ctx.Err() != nil && o.FinishReason == engine.FinishAbort {
					attrs = append(attrs, "aborted", "client gone")
				}
				level := slog.LevelInfo
				if o.Err != nil {
					level = slog.LevelError
				}
				s.log.Log(ctx, level, "request", attrs...)
			}
		}
		merged <- choiceOutput{index: idx, out: o}
	}
}

// addError maps engine.Add's errors to HTTP; promptParam names the prompt's field.
func addError(err error, promptParam string, retry time.Duration) *apiError {
	switch {
	case errors.Is(err, engine.ErrQueueFull):
		return &apiError{status: http.StatusTooManyRequests, code: "rate_limit_exceeded",
			msg: "the server's queue is full; retry later: " + err.Error(), retryAfter: retry}
	case errors.Is(err, engine.ErrShutdown):
		return &apiError{status: http.StatusServiceUnavailable, code: "shutting_down", msg: "the server is shutting down"}
	case errors.Is(err, engine.ErrPromptTooLong):
		return badRequest(promptParam, "%v", err)
	}
	return badRequest("", "%v", err)
}

// newID returns a fresh request id with the given prefix.
func (s *Server) newID(prefix string) string { return prefix + "-" + s.newBase() }

// newBase returns a fresh id: the clock's low 40 bits and a counter, in hex.
func (s *Server) newBase() string {
	return fmt.Sprintf("%x%06x", time.Now().UnixNano()&0xffffffffff, s.nextID.Add(1)&0xffffff)
}

// tokenText is a token's text for logprobs.
func (st *state) tokenText(id int) string { return st.b.Tok.Decode([]int{id}) }

func bytesOf(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}

func finishPtr(o engine.Output) *string {
	if !o.Finished {
		return nil
	}
	r := o.FinishReason
	return &r
}
