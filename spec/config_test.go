// Tests of ParseConfig: accepted configurations with their defaults, and every kind of bad
// input giving an error that names the field.
package spec

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Config
	}{
		{`{"method": "draft_model", "model": "d.gguf", "num_speculative_tokens": 4}`,
			Config{Method: MethodDraft, Model: "d.gguf", NumTokens: 4}},
		{`{"model": "d.gguf", "num_speculative_tokens": 16, "disable_by_batch_size": 8, "max_model_len": 256, "draft_tensor_parallel_size": 1}`,
			Config{Method: MethodDraft, Model: "d.gguf", NumTokens: 16, DisableByBatchSize: 8, MaxModelLen: 256}},
		{`{"method": "ngram", "num_speculative_tokens": 3}`,
			Config{Method: MethodNGram, NumTokens: 3, PromptLookupMin: 5, PromptLookupMax: 5}},
		{`{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}`,
			Config{Method: MethodNGram, NumTokens: 3, PromptLookupMin: 4, PromptLookupMax: 4}},
		{`{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 4, "model": null}`,
			Config{Method: MethodNGram, NumTokens: 3, PromptLookupMin: 2, PromptLookupMax: 4}},
		{`{"model": "[ngram]", "num_speculative_tokens": 1, "prompt_lookup_min": 3}`,
			Config{Method: MethodNGram, NumTokens: 1, PromptLookupMin: 3, PromptLookupMax: 3}},
		{`{"method": "ngram", "num_speculative_tokens": 3, "disable_by_batch_size": -1}`,
			Config{Method: MethodNGram, NumTokens: 3, PromptLookupMin: 5, PromptLookupMax: 5, DisableByBatchSize: -1}},
		{`{"method": "eagle3", "model": "head", "num_speculative_tokens": 2}`,
			Config{Method: MethodEagle, Model: "head", NumTokens: 2}},
	} {
		got, err := ParseConfig(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseConfig(%s) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ in, field string }{
		{``, "JSON object"},
		{`{"method": "draft_model"`, "JSON object"},
		{`[1, 2]`, "JSON object"},
		{`null`, "JSON object"},
		{`{"model": "d.gguf", "num_speculative_tokens": 4} {}`, "text after"},
		{`{"model": "d.gguf", "num_speculative_tokens": 4, "num_spec_tokens": 2}`, `"num_spec_tokens"`},
		{`{"method": 1, "model": "d.gguf", "num_speculative_tokens": 4}`, "method: want a string"},
		{`{"method": "mlp_speculator", "model": "d.gguf", "num_speculative_tokens": 4}`, "method:"},
		{`{"num_speculative_tokens": 4}`, "method: missing"},
		{`{"method": "draft_model", "num_speculative_tokens": 4}`, "model: missing"},
		{`{"method": "eagle", "num_speculative_tokens": 4}`, "model: missing"},
		{`{"method": "ngram", "model": "d.gguf", "num_speculative_tokens": 4}`, "model:"},
		{`{"model": 3, "num_speculative_tokens": 4}`, "model: want a string"},
		{`{"model": "d.gguf"}`, "num_speculative_tokens: missing"},
		{`{"model": "d.gguf", "num_speculative_tokens": 0}`, "num_speculative_tokens: 0 is out of range"},
		{`{"model": "d.gguf", "num_speculative_tokens": 17}`, "num_speculative_tokens: 17 is out of range"},
		{`{"model": "d.gguf", "num_speculative_tokens": -1}`, "num_speculative_tokens"},
		{`{"model": "d.gguf", "num_speculative_tokens": "4"}`, "num_speculative_tokens: want an integer"},
		{`{"model": "d.gguf", "num_speculative_tokens": 2.5}`, "num_speculative_tokens: want an integer"},
		{`{"model": "d.gguf", "num_speculative_tokens": 2, "prompt_lookup_min": 2}`, "prompt_lookup_min: only for method ngram"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 0}`, "prompt_lookup_min: 0 is out of range"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 99}`, "prompt_lookup_max"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4, "prompt_lookup_max": 2}`, "prompt_lookup_min: 4 is above"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "disable_by_batch_size": 1}`, "disable_by_batch_size"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "disable_by_batch_size": true}`, "disable_by_batch_size: want an integer"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "disable_by_batch_size": 0}`, "disable_by_batch_size: 0"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "disable_by_batch_size": -2}`, "disable_by_batch_size: -2"},
		{`{"model": "d.gguf", "num_speculative_tokens": 2, "max_model_len": -5}`, "max_model_len"},
		{`{"model": "d.gguf", "num_speculative_tokens": 2, "draft_tensor_parallel_size": 2}`, "draft_tensor_parallel_size"},
	} {
		_, err := ParseConfig(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.HasPrefix(err.Error(), "speculative-config: ") {
			t.Errorf("ParseConfig(%s) error %v, want one naming %q", tc.in, err, tc.field)
		}
	}
}

// FuzzParseConfig: ParseConfig never panics, and what it accepts is within the limits.
func FuzzParseConfig(f *testing.F) {
	f.Add(`{"method": "draft_model", "model": "d.gguf", "num_speculative_tokens": 4}`)
	f.Add(`{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 4}`)
	f.Add(`{"model": "[ngram]", "num_speculative_tokens": 1, "disable_by_batch_size": 8}`)
	f.Add(`{"method": "eagle", "model": null, "num_speculative_tokens": 1e3}`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "speculative-config: ") {
				t.Fatalf("error %q does not start with speculative-config:", err)
			}
			return
		}
		if c.NumTokens < 1 || c.NumTokens > MaxSpecTokens || c.DisableByBatchSize < -1 || c.DisableByBatchSize == 1 || c.MaxModelLen < 0 {
			t.Fatalf("accepted %+v from %q", c, s)
		}
		switch c.Method {
		case MethodNGram:
			if c.Model != "" || c.PromptLookupMin < 1 || c.PromptLookupMin > c.PromptLookupMax || c.PromptLookupMax > MaxNGram {
				t.Fatalf("accepted %+v from %q", c, s)
			}
		case MethodDraft, MethodEagle:
			if c.Model == "" || c.PromptLookupMin != 0 || c.PromptLookupMax != 0 {
				t.Fatalf("accepted %+v from %q", c, s)
			}
		default:
			t.Fatalf("accepted method %q from %q", c.Method, s)
		}
	})
}
