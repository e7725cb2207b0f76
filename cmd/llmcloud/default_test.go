package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/loader"
)

// `llmcloud generate` with no model uses the built-in default model, says so, and continues
// "Once upon a time" with words of English: at least 90% of the words it prints occur in the
// recipe's held-out stories (recipes/default/data/val.txt).
func TestGenerateDefaultModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	stdout, stderr := run(t, "generate", "--prompt", "Once upon a time", "--max-tokens", "48", "--seed", "1", "--threads", "2")
	if !strings.Contains(stderr, "built-in default model") {
		t.Errorf("no log line about the default model:\n%s", stderr)
	}
	words := wordRE.FindAllString(stdout, -1)
	t.Logf("continuation: %q", stdout)
	if len(words) < 10 {
		t.Fatalf("continuation %q has %d words, want at least 10", stdout, len(words))
	}
	known := knownWords(t)
	unknown := 0
	for _, w := range words {
		if !known[strings.ToLower(w)] {
			unknown++
			t.Logf("%q is not in the held-out text", w)
		}
	}
	if float64(unknown) > 0.1*float64(len(words)) {
		t.Errorf("%d of %d words are not in the held-out text's vocabulary: %q", unknown, len(words), stdout)
	}
}

// `llmcloud serve` with no model serves the default model under its name.
func TestServeDefaultModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	url, logs, stop := startServe(t, "--threads", "1", "--kv-cache-memory", "16MiB")
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
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "built-in default model") {
		t.Errorf("no log line about the default model:\n%s", logs.String())
	}
}

// `llmcloud chat` with no model chats with the default model, says how to quit when it starts,
// and ends cleanly on /exit, /quit and end of input (Ctrl-D).
func TestChatDefaultModelQuit(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, in := range []string{"", "/exit\n", "  /quit  \n", "\n"} {
		var out, errb bytes.Buffer
		if err := runChat([]string{"--threads", "1"}, strings.NewReader(in), &out, &errb); err != nil {
			t.Fatalf("input %q: %v\n%s", in, err, errb.String())
		}
		if !strings.Contains(errb.String(), "built-in default model") || !strings.Contains(errb.String(), chatQuitHelp) {
			t.Errorf("input %q: the banner does not name the default model and how to quit:\n%s", in, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("input %q: replied %q to no message", in, out.String())
		}
	}
}

// Every command that takes a model falls back to the built-in default model, saying so in one
// line on stderr: perplexity, logits, inspect, bench latency, bench throughput and convert
// (with OUT alone).
func TestDefaultModelFallbacks(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("The jury said it did find that the city was in the election. ", 60)), 0o644); err != nil {
		t.Fatal(err)
	}
	logits := filepath.Join(dir, "logits.f32")
	converted := filepath.Join(dir, "copy.gguf")
	for _, c := range []struct {
		args []string
		want *regexp.Regexp // on stdout
	}{
		{[]string{"perplexity", "--file", text, "--ctx", "256", "--threads", "1"}, regexp.MustCompile(`^PPL = [0-9.]+ \+/- `)},
		{[]string{"perplexity", "--file", text, "--threads", "1"}, regexp.MustCompile(`^PPL = [0-9.]+ \+/- `)}, // --ctx: the model's
		{[]string{"logits", "--prompt", "The jury said", "-o", logits, "--threads", "1"}, regexp.MustCompile(`^[0-9]+( [0-9]+)+\n$`)},
		{[]string{"inspect"}, regexp.MustCompile(`llmcloud/default-[0-9a-f]+\.gguf: gguf, architecture llama\n`)},
		{[]string{"inspect", "--json"}, regexp.MustCompile(`"format": "gguf"`)},
		{[]string{"bench", "latency", "-p", "8", "-n", "4", "-r", "1", "-t", "1", "--no-bandwidth"}, regexp.MustCompile(`\| +tg4 \|`)},
		{[]string{"bench", "throughput", "--num-prompts", "2", "--input-len", "8", "--output-len", "4", "--threads", "1"}, regexp.MustCompile(`^Throughput: `)},
		{[]string{"data", "distill", "--docs", "2", "-o", filepath.Join(dir, "stories.txt"), "--threads", "1"}, regexp.MustCompile(`^kept 2 of [0-9]+ sampled documents`)},
		{[]string{"convert", converted}, regexp.MustCompile(`^wrote .*copy\.gguf \(GGUF, [0-9]+ tensors\) from .*default-[0-9a-f]+\.gguf \(gguf\)`)},
	} {
		stdout, stderr := run(t, c.args...)
		if n := strings.Count(stderr, "built-in default model"); n != 1 {
			t.Errorf("%s: %d log lines about the default model, want 1:\n%s", strings.Join(c.args, " "), n, stderr)
		}
		if !c.want.MatchString(stdout) {
			t.Errorf("%s: stdout does not match %s:\n%s", strings.Join(c.args, " "), c.want, stdout)
		}
	}
	if fi, err := os.Stat(logits); err != nil || fi.Size() == 0 {
		t.Errorf("logits wrote no file: %v", err)
	}
	b, err := loader.Open(converted, loader.Options{})
	if err != nil {
		t.Fatalf("the converted default model: %v", err)
	}
	defer b.Close()
	if b.Name != defaultmodel.Name {
		t.Errorf("the converted default model is named %q, want %q", b.Name, defaultmodel.Name)
	}
}

// `llmcloud models` lists the default model: name, file, size, parameters, architecture, and
// how to pass another; --json the same; the usage lists the command.
func TestModelsCommand(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	stdout, _ := run(t, "models")
	for _, want := range []string{defaultmodel.Name, path, strconv.Itoa(len(defaultmodel.Bytes())) + " bytes",
		"parameters", "architecture   llama", "--model MODEL"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("models output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _ = run(t, "models", "--json")
	var list []modelsEntry
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("models --json: %v\n%s", err, stdout)
	}
	if len(list) != 1 || list[0].Name != defaultmodel.Name || list[0].Path != path || list[0].Params < 1e6 || !list[0].Default {
		t.Errorf("models --json: %+v", list)
	}
	var out, errb strings.Builder
	runMain([]string{"help"}, &out, &errb)
	if !strings.Contains(errb.String(), "  models ") || !strings.Contains(errb.String(), "built-in default model") {
		t.Errorf("usage does not list models or mention the default model:\n%s", errb.String())
	}
}
