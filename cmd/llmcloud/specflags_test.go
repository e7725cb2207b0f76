// Tests of the speculative-decoding flags: every command's help mentions them, and bad values
// fail at start-up with an error naming the flag or the config field.
package main

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestSpecHelp(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"serve", "-h"}, []string{"-speculative-config", "num_speculative_tokens", "ngram", "disable_by_batch_size"}},
		{[]string{"generate", "-h"}, []string{"-speculative-config", "-draft", "-num-speculative-tokens"}},
		{[]string{"bench", "latency", "-h"}, []string{"-speculative-config", "-draft", "-num-speculative-tokens", "-prompt"}},
		{[]string{"bench", "throughput", "-h"}, []string{"-speculative-config", "-draft", "-num-speculative-tokens"}},
	} {
		_, errs, code := runCmd(t, tc.args...)
		if code != 0 {
			t.Errorf("%s: exit %d", strings.Join(tc.args, " "), code)
		}
		for _, f := range tc.flags {
			if !strings.Contains(errs, f) {
				t.Errorf("%s does not mention %s:\n%s", strings.Join(tc.args, " "), f, errs)
			}
		}
	}
}

// TestSpecConfigErrors: malformed or out-of-range settings and a draft with another
// vocabulary are refused at start-up, naming the flag or field.
func TestSpecConfigErrors(t *testing.T) {
	other := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--speculative-config", `{"model": "d.gguf"`}, "speculative-config: want a JSON object"},
		{[]string{"generate", "--speculative-config", `{"model": "d.gguf", "num_speculative_tokens": 40}`}, "num_speculative_tokens: 40 is out of range"},
		{[]string{"generate", "--speculative-config", `{"model": "d.gguf", "k": 4}`}, `unknown field "k"`},
		{[]string{"generate", "--draft", other, "--num-speculative-tokens", "17"}, "--num-speculative-tokens: 17 is out of range"},
		{[]string{"generate", "--num-speculative-tokens", "3"}, "--num-speculative-tokens goes with --draft"},
		{[]string{"generate", "--draft", other, "--speculative-config", "{}"}, "not both"},
		{[]string{"generate", "--draft", other, "--prompt", "Hi"}, "speculative-config: model: " + other + " has a vocabulary of 512 tokens, the target 4096"},
		{[]string{"serve", "--port", "0", "--speculative-config", `{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 9, "prompt_lookup_max": 3}`}, "prompt_lookup_min: 9 is above"},
		{[]string{"serve", "--port", "0", "--speculative-config", `{"method": "draft_model", "num_speculative_tokens": 2}`}, "speculative-config: model: missing"},
		{[]string{"bench", "throughput", "--speculative-config", `{"method": "draft_model", "model": "` + other + `", "num_speculative_tokens": 2}`, "--num-prompts", "1"}, "has a vocabulary of 512 tokens"},
		{[]string{"bench", "latency", "--draft", other, "-r", "1", "-n", "4"}, "has a vocabulary of 512 tokens"},
	} {
		_, errs, code := runCmd(t, tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("llmcloud %s: exit %d, stderr %q; want an error with %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
}
