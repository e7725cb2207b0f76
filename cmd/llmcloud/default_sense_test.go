package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/distill"
	"github.com/llmcloud/llmcloud/loader"
)

// sensePrompts are prompts a new user might try on the default model; a few are far from its
// children's-story training text.
var sensePrompts = []string{
	"Once upon a time", "The jury said", "Tom and his dog", "One day, a little bird",
	"The sun was hot and", "My favorite food is", "She opened the door and saw", "The old man",
}

// The default model served with no sampling settings in the request (the server's defaults:
// the model's own, else temperature 0.8 and top-p 0.95) writes text that does not loop: the
// share of repeated 4-grams of tokens in each completion of up to 200 tokens averages under
// 10%, completions are not cut short, and at least 90% of their words occur in the recipe's
// held-out text (recipes/default/data/val.txt) — words of English, not made-up ones.
func TestDefaultModelWritesSense(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: samples 8 x 200 tokens")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	url, _, _ := startServe(t, "--threads", "2")

	p, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(p, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	known := knownWords(t)

	var repSum float64
	var tokens, words, unknown int
	for i, prompt := range sensePrompts {
		body := fmt.Sprintf(`{"prompt": %q, "max_tokens": 200, "seed": %d}`, prompt, i+1)
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var c struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(raw, &c) != nil || len(c.Choices) != 1 {
			t.Fatalf("completion: %d %s", resp.StatusCode, raw)
		}
		text := c.Choices[0].Text
		ids := b.Tok.Encode(text, false, false)
		rep := distill.Repetition(ids, 4)
		repSum += rep
		tokens += len(ids)
		for _, w := range wordRE.FindAllString(text, -1) {
			words++
			if !known[strings.ToLower(w)] {
				unknown++
			}
		}
		t.Logf("%q (%d tokens, 4-gram repetition %.1f%%):%s", prompt, len(ids), 100*rep, text)
	}
	n := float64(len(sensePrompts))
	t.Logf("mean 4-gram repetition %.1f%%, mean length %.0f tokens, %d of %d words unknown", 100*repSum/n, float64(tokens)/n, unknown, words)
	if repSum/n >= 0.10 {
		t.Errorf("mean 4-gram repetition %.1f%%, want under 10%%", 100*repSum/n)
	}
	if float64(tokens)/n < 80 {
		t.Errorf("mean completion %.0f tokens, want at least 80 (the model stops too early)", float64(tokens)/n)
	}
	if float64(unknown) > 0.1*float64(words) {
		t.Errorf("%d of %d words are not in the held-out text's vocabulary", unknown, words)
	}
}

var wordRE = regexp.MustCompile(`[A-Za-z]+`)

// knownWords is the vocabulary of the recipe's held-out text, lower-cased.
func knownWords(t *testing.T) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "recipes", "default", "data", "val.txt"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, w := range wordRE.FindAllString(string(text), -1) {
		known[strings.ToLower(w)] = true
	}
	return known
}
