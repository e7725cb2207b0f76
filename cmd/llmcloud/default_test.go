package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

// `llmcloud generate` with no model uses the built-in default model, says so, and continues
// "The jury said" greedily with words of English: every word it prints occurs in the Brown
// training text the model was trained on.
func TestGenerateDefaultModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	stdout, stderr := run(t, "generate", "--prompt", "The jury said", "--max-tokens", "24", "--threads", "2")
	if !strings.Contains(stderr, "built-in default model") {
		t.Errorf("no log line about the default model:\n%s", stderr)
	}
	words := regexp.MustCompile(`[A-Za-z]+`).FindAllString(stdout, -1)
	t.Logf("greedy continuation: %q", stdout)
	if len(words) < 5 {
		t.Fatalf("continuation %q has %d words, want at least 5", stdout, len(words))
	}
	// The distinct lower-cased words of ../shared/data/brown/train.txt, one a line (see
	// testdata/README.md for the command that made the list).
	brown, err := os.ReadFile(fixture.Path(t, "data", "brown", "train-words.txt"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, w := range strings.Fields(string(brown)) {
		known[w] = true
	}
	for _, w := range words {
		if !known[strings.ToLower(w)] {
			t.Errorf("%q is not a word of the Brown training text (continuation %q)", w, stdout)
		}
	}
}

// `llmcloud serve` with no model serves the default model under its name.
func TestServeDefaultModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() {
		done <- serve(ctx, []string{"--host", "127.0.0.1", "--port", "0", "--threads", "1", "--kv-cache-memory", "16MiB"}, &logs,
			func(a string) { addrc <- a })
	}()
	var url string
	select {
	case a := <-addrc:
		url = "http://" + a
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	waitHealthy(t, url)
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model": "`+defaultmodel.Name+`", "prompt": "The jury said", "max_tokens": 8, "temperature": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var c struct {
		Model   string `json:"model"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &c) != nil || c.Model != defaultmodel.Name || len(c.Choices) != 1 || c.Choices[0].Text == "" {
		t.Fatalf("completion: %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "built-in default model") {
		t.Errorf("no log line about the default model:\n%s", logs.String())
	}
}
