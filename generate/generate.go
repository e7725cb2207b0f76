// Package generate runs one sequence from prompt to finish on a model: a batched prefill of the
// prompt, then one decode step per token through the KV cache, sampling, incremental
// detokenization, stop strings, stop token ids and a token limit. It is the single-sequence
// path used by `llmcloud generate` and `chat`; the batching engine serves many at once.
package generate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Options controls one generation.
type Options struct {
	MaxTokens    int           // tokens to generate at most (> 0)
	Sample       sample.Params // sampling; zero value = greedy
	Stop         []string      // stop strings (not included in the output)
	StopTokenIDs []int         // extra ids that end generation (not included in the output)
	IgnoreEOS    bool          // keep going past end-of-generation tokens
}

// Finish reasons, as the OpenAI API names them.
const (
	FinishStop   = "stop"   // EOS, a stop token id or a stop string
	FinishLength = "length" // MaxTokens or the context length
)

// Result describes a finished generation.
type Result struct {
	Text          string
	IDs           []int // generated ids (a stop token id is not included)
	Logprobs      []sample.Result
	FinishReason  string
	PromptTokens  int
	PrefillTime   time.Duration
	DecodeTime    time.Duration // all decode steps after the first token
	FirstTokenLag time.Duration // prefill + first sample (time to first token)
}

// Run generates a continuation of promptIDs. onText, if not nil, receives the output text as
// it becomes final (never a broken UTF-8 sequence, never part of a stop string).
func Run(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, promptIDs []int, opts Options, onText func(string)) (Result, error) {
	res := Result{PromptTokens: len(promptIDs)}
	if len(promptIDs) == 0 {
		return res, fmt.Errorf("generate: empty prompt")
	}
	if opts.MaxTokens <= 0 {
		return res, fmt.Errorf("generate: max tokens %d must be positive", opts.MaxTokens)
	}
	ctxLen := m.Config.CtxLen
	if ctxLen > 0 && len(promptIDs) >= ctxLen {
		return res, fmt.Errorf("generate: prompt of %d tokens does not fit the context length %d (leave room for at least one new token)", len(promptIDs), ctxLen)
	}
	maxNew := opts.MaxTokens
	if ctxLen > 0 {
		maxNew = min(maxNew, ctxLen-len(promptIDs))
	}
	s, err := sample.New(opts.Sample)
	if err != nil {
		return res, err
	}
	s.SetPrompt(promptIDs)
	cache := m.NewCache(len(promptIDs) + maxNew)
	dec := tok.NewDecoder()
	stop := NewStopMatcher(opts.Stop)
	var text []byte
	emit := func(piece string) bool {
		out, stopped := stop.Push(piece)
		text = append(text, out...)
		if onText != nil && out != "" {
			onText(out)
		}
		return stopped
	}

	t0 := time.Now()
	logits, err := m.Forward(cache, promptIDs, 0, false)
	if err != nil {
		return res, err
	}
	res.PrefillTime = time.Since(t0)
	var tDecode time.Time
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r, err := s.Sample(logits)
		if err != nil {
			return res, err
		}
		if i == 0 {
			res.FirstTokenLag = time.Since(t0)
			tDecode = time.Now()
		}
		id := r.ID
		if (!opts.IgnoreEOS && tok.IsEOG(id)) || slices.Contains(opts.StopTokenIDs, id) {
			res.FinishReason = FinishStop
			break
		}
		res.IDs = append(res.IDs, id)
		if opts.Sample.Logprobs || opts.Sample.TopLogprobs > 0 {
			res.Logprobs = append(res.Logprobs, r)
		}
		if emit(dec.Add(id)) {
			res.FinishReason = FinishStop
			break
		}
		if len(res.IDs) >= maxNew {
			res.FinishReason = FinishLength
			break
		}
		if logits, err = m.Decode(cache, id); err != nil {
			return res, err
		}
	}
	if !tDecode.IsZero() {
		res.DecodeTime = time.Since(tDecode)
	}
	if !stop.stopped {
		// flush what is held back: an unfinished UTF-8 tail, then a partial stop-string match
		emit(dec.Flush())
		tail := stop.Flush()
		text = append(text, tail...)
		if onText != nil && tail != "" {
			onText(tail)
		}
	}
	res.Text = string(text)
	return res, nil
}
