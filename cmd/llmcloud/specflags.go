// Speculative-decoding flags shared by serve, generate and the benches: vLLM's
// --speculative-config JSON, and for generate and the benches the shorthand --draft MODEL
// [--num-speculative-tokens K]. The configuration is parsed before the model loads (a typo
// fails at once); the draft is opened and checked against the target after it (spec.Build).
package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/spec"
)

// defaultSpecTokens is k when --draft is given without --num-speculative-tokens.
const defaultSpecTokens = 4

type specFlags struct {
	config string
	draft  string
	k      int
	cfg    spec.Config // parsed by check
	on     bool        // speculation was asked for
}

// register adds --speculative-config, and with shorthand also --draft and
// --num-speculative-tokens.
func (s *specFlags) register(fs *flag.FlagSet, shorthand bool) {
	fs.StringVar(&s.config, "speculative-config", "", `speculative decoding, vLLM's JSON: {"method": "draft_model", "model": DRAFT, "num_speculative_tokens": K} `+
		`(a draft model sharing the target's vocabulary: a smaller model, or the target at a lower bit width), `+
		`{"method": "ngram", "num_speculative_tokens": K, "prompt_lookup_min": N, "prompt_lookup_max": M} (prompt lookup), {"method": "medusa", "model": HEAD, "num_speculative_tokens": K} (a learned draft head from llmcloud train draft-head); `+
		`other fields: disable_by_batch_size (speculation off while this many sequences or more run; -1 = never; default: the engine's), max_model_len (the longest sequence drafted for). Default: off`)
	if shorthand {
		fs.StringVar(&s.draft, "draft", "", `draft model for speculative decoding (GGUF file or Hugging Face directory sharing the model's vocabulary); `+
			`shorthand for --speculative-config '{"method": "draft_model", "model": DRAFT, "num_speculative_tokens": K}'`)
		fs.IntVar(&s.k, "num-speculative-tokens", 0, fmt.Sprintf("with --draft: draft tokens per step, 1..%d (default %d)", spec.MaxSpecTokens, defaultSpecTokens))
	}
}

// check parses the flags into s.cfg (before any model is loaded).
func (s *specFlags) check() error {
	switch {
	case s.config != "" && s.draft != "":
		return usagef("give --speculative-config or --draft, not both")
	case s.k != 0 && s.draft == "":
		return usagef("--num-speculative-tokens goes with --draft (in --speculative-config it is num_speculative_tokens)")
	case s.draft != "":
		k := s.k
		if k == 0 {
			k = defaultSpecTokens
		}
		if k < 1 || k > spec.MaxSpecTokens {
			return usagef("--num-speculative-tokens: %d is out of range 1..%d", k, spec.MaxSpecTokens)
		}
		s.cfg = spec.Config{Method: spec.MethodDraft, Model: s.draft, NumTokens: k}
	case s.config != "":
		cfg, err := spec.ParseConfig(s.config)
		if err != nil {
			return usageError{err.Error()}
		}
		s.cfg = cfg
	default:
		return nil
	}
	s.on = true
	return nil
}

// build opens the proposer for target b serving sequences of up to maxModelLen tokens, and
// returns it with a function releasing the draft's files (call it after the engine stopped).
// A draft model's KV pool gets kvTokens slots (the target pool's tokens plus room for the
// drafts suits: the draft caches what the target does).
func (s *specFlags) build(b *loader.Bundle, maxModelLen, kvTokens int, invariant bool) (engine.SpecOptions, func(), error) {
	so, err := spec.Build(s.cfg, b.Model, b.Tok, maxModelLen, spec.DraftOptions{KVTokens: kvTokens, Invariant: invariant})
	if err != nil {
		return so, nil, err
	}
	release := func() {
		if c, ok := so.Proposer.(io.Closer); ok {
			c.Close()
		}
	}
	return so, release, nil
}

// describe is the configuration for a log line.
func (s *specFlags) describe() string {
	c := s.cfg
	switch c.Method {
	case spec.MethodNGram:
		return fmt.Sprintf("ngram k=%d n=%d..%d", c.NumTokens, c.PromptLookupMin, c.PromptLookupMax)
	default:
		return c.Method + " " + strconv.Quote(c.Model) + " k=" + strconv.Itoa(c.NumTokens)
	}
}

// useSpec sets the engine's speculative decoding.
func useSpec(eo *engine.Options, so engine.SpecOptions) error {
	eo.Speculative = so
	return nil
}

// specSummary is one line of speculative-decoding counts: drafts, acceptance, per position.
func specSummary(st engine.SpecStats) string {
	rate := 0.0
	if st.DraftTokens > 0 {
		rate = float64(st.AcceptedTokens) / float64(st.DraftTokens)
	}
	return fmt.Sprintf("%d drafts, %d draft tokens, %d accepted (%.1f%%), accepted by position %v",
		st.Drafts, st.DraftTokens, st.AcceptedTokens, 100*rate, st.AcceptedPerPos)
}
