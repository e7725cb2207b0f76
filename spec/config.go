// This file parses the speculative-decoding configuration, the JSON object vLLM's
// --speculative-config takes, strictly: an unknown field, a value of the wrong type or out of
// range is an error naming the field, so that a typo fails at start-up rather than silently
// turning speculation off.
//
// Accepted fields (vLLM's names and meanings):
//
//	method                  "draft_model", "ngram", "medusa" (llmcloud's learned draft head,
//	                        `llmcloud train draft-head`) or "eagle" ("eagle3" is read as "eagle";
//	                        not available yet);
//	                        when absent: "ngram" if model is "[ngram]" (vLLM's old spelling),
//	                        else "draft_model" if a model is given
//	model                   the draft model (GGUF file or Hugging Face directory), or the
//	                        draft-head file for medusa; required for all but ngram
//	num_speculative_tokens  k, draft tokens per sequence and step, 1..MaxSpecTokens (required)
//	prompt_lookup_min/max   ngram only: the shortest and longest n-gram matched, 1..MaxNGram;
//	                        one given sets the other, neither gives DefaultNGram for both
//	disable_by_batch_size   speculation off while this many sequences or more run (>= 2);
//	                        absent: the engine's default (engine.SpecOptions); -1: never
//	                        (llmcloud's; vLLM never switches off unless this is given)
//	max_model_len           the longest sequence the draft drafts for (at most its own context
//	                        length); longer sequences run without drafts
//	draft_tensor_parallel_size  1 or null (llmcloud runs the draft in-process)
//
// A null value is the same as an absent field.

package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Methods.
const (
	MethodDraft = "draft_model"
	MethodNGram = "ngram"
	MethodEagle = "eagle"
	// MethodMedusa is a learned draft head on the target's hidden states (spec.HeadProposer).
	MethodMedusa = "medusa"
)

// Limits of the configuration.
const (
	MaxSpecTokens = 16 // num_speculative_tokens at most
	MaxNGram      = 32 // prompt_lookup_max at most
	DefaultNGram  = 5  // prompt_lookup_min and _max when neither is given (as vLLM)
)

// Config is a parsed --speculative-config.
type Config struct {
	Method             string // MethodDraft, MethodNGram, MethodMedusa or MethodEagle
	Model              string // the draft model or head (draft_model, eagle)
	NumTokens          int    // num_speculative_tokens
	PromptLookupMin    int    // ngram
	PromptLookupMax    int    // ngram
	DisableByBatchSize int    // 0 = the engine's default, -1 = never
	MaxModelLen        int    // 0 = the draft's context length
}

// fields are the accepted JSON fields, in the order errors list them.
var fields = []string{"method", "model", "num_speculative_tokens", "prompt_lookup_min",
	"prompt_lookup_max", "disable_by_batch_size", "max_model_len", "draft_tensor_parallel_size"}

// ParseConfig parses s, a JSON object with vLLM's SpeculativeConfig fields.
func ParseConfig(s string) (Config, error) {
	var c Config
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&raw); err != nil || raw == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return c, fmt.Errorf("speculative-config: want a JSON object such as {\"method\": \"draft_model\", \"model\": \"draft.gguf\", \"num_speculative_tokens\": 4}: %v", err)
	}
	if dec.More() {
		return c, fmt.Errorf("speculative-config: text after the JSON object")
	}
	for name := range raw {
		if !slices.Contains(fields, name) {
			return c, fmt.Errorf("speculative-config: unknown field %q (known: %s)", name, strings.Join(fields, ", "))
		}
	}
	var lookupMin, lookupMax, tp int
	set := map[string]bool{} // fields given and not null
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"method", &c.Method},
		{"model", &c.Model},
		{"num_speculative_tokens", &c.NumTokens},
		{"prompt_lookup_min", &lookupMin},
		{"prompt_lookup_max", &lookupMax},
		{"disable_by_batch_size", &c.DisableByBatchSize},
		{"max_model_len", &c.MaxModelLen},
		{"draft_tensor_parallel_size", &tp},
	} {
		v, ok := raw[f.name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			want := "an integer"
			if _, isStr := f.dst.(*string); isStr {
				want = "a string"
			}
			return c, fmt.Errorf("speculative-config: %s: want %s, got %s", f.name, want, v)
		}
		set[f.name] = true
	}
	switch {
	case !set["method"] && c.Model == "[ngram]":
		c.Method, c.Model = MethodNGram, ""
	case !set["method"] && c.Model != "":
		c.Method = MethodDraft
	case !set["method"]:
		return c, fmt.Errorf("speculative-config: method: missing (want %q, %q, %q or %q)", MethodDraft, MethodNGram, MethodMedusa, MethodEagle)
	case c.Method == "eagle3":
		c.Method = MethodEagle
	case c.Method == MethodDraft || c.Method == MethodNGram || c.Method == MethodMedusa || c.Method == MethodEagle:
	default:
		return c, fmt.Errorf("speculative-config: method: %q is not supported (want %q, %q, %q or %q)", c.Method, MethodDraft, MethodNGram, MethodMedusa, MethodEagle)
	}
	hasMin, hasMax := set["prompt_lookup_min"], set["prompt_lookup_max"]
	switch {
	case !set["num_speculative_tokens"]:
		return c, fmt.Errorf("speculative-config: num_speculative_tokens: missing (want 1..%d)", MaxSpecTokens)
	case c.NumTokens < 1 || c.NumTokens > MaxSpecTokens:
		return c, fmt.Errorf("speculative-config: num_speculative_tokens: %d is out of range 1..%d", c.NumTokens, MaxSpecTokens)
	case c.Method != MethodNGram && c.Model == "":
		return c, fmt.Errorf("speculative-config: model: missing (method %s needs a draft model or head file)", c.Method)
	case c.Method == MethodNGram && c.Model != "":
		return c, fmt.Errorf("speculative-config: model: method ngram takes no model (got %q)", c.Model)
	case c.Method != MethodNGram && hasMin:
		return c, fmt.Errorf("speculative-config: prompt_lookup_min: only for method ngram")
	case c.Method != MethodNGram && hasMax:
		return c, fmt.Errorf("speculative-config: prompt_lookup_max: only for method ngram")
	case set["disable_by_batch_size"] && c.DisableByBatchSize < 2 && c.DisableByBatchSize != -1:
		return c, fmt.Errorf("speculative-config: disable_by_batch_size: %d (want 2 or more, or -1 = never; absent = the engine's default)", c.DisableByBatchSize)
	case c.MaxModelLen < 0:
		return c, fmt.Errorf("speculative-config: max_model_len: %d is negative", c.MaxModelLen)
	case tp != 0 && tp != 1:
		return c, fmt.Errorf("speculative-config: draft_tensor_parallel_size: %d (only 1: the draft runs in the serving process)", tp)
	}
	if c.Method == MethodNGram {
		for _, f := range []struct {
			name string
			v    int
			set  bool
		}{{"prompt_lookup_min", lookupMin, hasMin}, {"prompt_lookup_max", lookupMax, hasMax}} {
			if f.set && (f.v < 1 || f.v > MaxNGram) {
				return c, fmt.Errorf("speculative-config: %s: %d is out of range 1..%d", f.name, f.v, MaxNGram)
			}
		}
		switch {
		case !hasMin && !hasMax:
			lookupMin, lookupMax = DefaultNGram, DefaultNGram
		case !hasMin:
			lookupMin = lookupMax
		case !hasMax:
			lookupMax = lookupMin
		case lookupMin > lookupMax:
			return c, fmt.Errorf("speculative-config: prompt_lookup_min: %d is above prompt_lookup_max %d", lookupMin, lookupMax)
		}
		c.PromptLookupMin, c.PromptLookupMax = lookupMin, lookupMax
	}
	return c, nil
}
