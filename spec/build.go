// This file turns a parsed --speculative-config into the engine's SpecOptions: it opens the
// draft model with the project's loader (a GGUF file or a Hugging Face directory, any dtype),
// checks it against the target — the same vocabulary (size, and token strings when both
// tokenizers are known) and a context long enough for the served max model length — and
// returns the proposer. Every failure is a start-up error naming the config field.

package spec

import (
	"errors"
	"fmt"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Build returns the speculative-decoding options of cfg for target (tokenizer targetTok, nil
// if unknown) serving sequences of up to maxModelLen tokens (0 = the target's context
// length). opts sizes a draft model's KV pool and sets its batch invariance. A draft proposer
// holds its model's files open: close it (io.Closer) after the engine has stopped.
func Build(cfg Config, target *model.Model, targetTok *tokenizer.Tokenizer, maxModelLen int, opts DraftOptions) (engine.SpecOptions, error) {
	var so engine.SpecOptions
	if cfg.NumTokens < 1 || cfg.NumTokens > MaxSpecTokens {
		return so, fmt.Errorf("speculative-config: num_speculative_tokens: %d is out of range 1..%d", cfg.NumTokens, MaxSpecTokens)
	}
	if cfg.DisableByBatchSize < -1 || cfg.DisableByBatchSize == 1 {
		return so, fmt.Errorf("speculative-config: disable_by_batch_size: %d (want 2 or more, -1 = never, 0 = the engine's default)", cfg.DisableByBatchSize)
	}
	so.NumTokens, so.DisableByBatchSize = cfg.NumTokens, cfg.DisableByBatchSize
	switch cfg.Method {
	case MethodDraft:
		d, err := buildDraft(cfg, target, targetTok, maxModelLen, opts)
		if err != nil {
			return so, err
		}
		so.Proposer = d
	case MethodNGram:
		g, err := NewNGram(cfg.PromptLookupMin, cfg.PromptLookupMax)
		if err != nil {
			return so, fmt.Errorf("speculative-config: prompt_lookup_min/max: %w", err)
		}
		so.Proposer = g
	case MethodMedusa:
		h, err := buildHead(cfg, target)
		if err != nil {
			return so, err
		}
		so.Proposer = h
	case MethodEagle:
		return so, errors.New("speculative-config: method: eagle is not available yet (method medusa is llmcloud's learned draft head)")
	default:
		return so, fmt.Errorf("speculative-config: method: %q is not supported (want %q, %q, %q or %q)", cfg.Method, MethodDraft, MethodNGram, MethodMedusa, MethodEagle)
	}
	return so, nil
}

// buildHead loads the draft-head file of cfg and checks it against target and k.
func buildHead(cfg Config, target *model.Model) (*HeadProposer, error) {
	if cfg.Model == "" {
		return nil, errors.New("speculative-config: model: missing (method medusa needs a draft-head file from llmcloud train draft-head)")
	}
	h, err := LoadHead(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("speculative-config: model: %w", err)
	}
	if cfg.NumTokens > h.K() {
		return nil, fmt.Errorf("speculative-config: num_speculative_tokens: %d is more than the %d heads of %s", cfg.NumTokens, h.K(), cfg.Model)
	}
	p, err := NewHeadProposer(h, target, target.Pool)
	if err != nil {
		return nil, fmt.Errorf("speculative-config: model: %w", err)
	}
	return p, nil
}

// buildDraft opens and checks the draft model of cfg.
func buildDraft(cfg Config, target *model.Model, targetTok *tokenizer.Tokenizer, maxModelLen int, opts DraftOptions) (*Draft, error) {
	if cfg.Model == "" {
		return nil, errors.New("speculative-config: model: missing (method draft_model needs a draft model: a GGUF file or a Hugging Face directory)")
	}
	b, err := loader.Open(cfg.Model, loader.Options{})
	if err != nil {
		return nil, fmt.Errorf("speculative-config: model: %w", err)
	}
	d, err := checkedDraft(cfg, b, target, targetTok, maxModelLen, opts)
	if err != nil {
		b.Close()
		return nil, err
	}
	d.close = b.Close
	return d, nil
}

func checkedDraft(cfg Config, b *loader.Bundle, target *model.Model, targetTok *tokenizer.Tokenizer, maxModelLen int, opts DraftOptions) (*Draft, error) {
	dm := b.Model
	if dm.Config.Vocab != target.Config.Vocab {
		return nil, fmt.Errorf("speculative-config: model: %s has a vocabulary of %d tokens, the target %d: a draft must share the target's vocabulary",
			cfg.Model, dm.Config.Vocab, target.Config.Vocab)
	}
	if err := sameTokens(b.Tok, targetTok); err != nil {
		return nil, fmt.Errorf("speculative-config: model: %s: %w", cfg.Model, err)
	}
	if maxModelLen <= 0 {
		maxModelLen = target.Config.CtxLen
	}
	ctx := dm.Config.CtxLen
	switch {
	case cfg.MaxModelLen > 0 && ctx > 0 && cfg.MaxModelLen > ctx:
		return nil, fmt.Errorf("speculative-config: max_model_len: %d is above the draft's context length %d", cfg.MaxModelLen, ctx)
	case cfg.MaxModelLen > 0:
		opts.MaxLen = cfg.MaxModelLen
	case ctx > 0 && maxModelLen > ctx:
		return nil, fmt.Errorf("speculative-config: model: the draft's context length %d is shorter than the served max model length %d; "+
			"serve with a max model length of at most %d, or set max_model_len (at most %d) in the speculative config to draft only for sequences that short",
			ctx, maxModelLen, ctx, ctx)
	}
	if dm.Pool == nil {
		dm.Pool = target.Pool
	}
	return NewDraft(dm, opts)
}

// sameTokens reports an error when both tokenizers are known and differ in a token string.
func sameTokens(draft, target *tokenizer.Tokenizer) error {
	if draft == nil || target == nil {
		return nil
	}
	dt, tt := draft.Vocab().Tokens, target.Vocab().Tokens
	if len(dt) != len(tt) {
		return fmt.Errorf("its tokenizer has %d tokens, the target's %d: a draft must share the target's vocabulary", len(dt), len(tt))
	}
	for i := range dt {
		if dt[i] != tt[i] {
			return fmt.Errorf("token %d is %q, the target's is %q: a draft must share the target's vocabulary", i, dt[i], tt[i])
		}
	}
	return nil
}
