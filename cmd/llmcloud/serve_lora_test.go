package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/defaultmodel"
)

func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func complete(t *testing.T, url, model, prompt string) string {
	t.Helper()
	js, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 12, "temperature": 0})
	code, b := postJSON(t, url+"/v1/completions", string(js))
	var c api.CompletionResponse
	if code != 200 || json.Unmarshal(b, &c) != nil || len(c.Choices) != 1 || c.Model != model {
		t.Fatalf("completion with model %q: %d %s", model, code, b)
	}
	return c.Choices[0].Text
}

func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\{[^}]*\} (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("metric %s not found", name)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestServeLoRA: serve --enable-lora over real HTTP: adapters by model name, /v1/models with
// parent, batched requests over several adapters equal each alone (batch invariant), load and
// unload, 404 for an unknown adapter, rank above --max-lora-rank and an adapter for another
// base refused, and no prefix-cache sharing between adapters.
func TestServeLoRA(t *testing.T) {
	base, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	mk := func(name string, args ...string) string {
		p := filepath.Join(dir, name)
		if err := runLoRA(append([]string{"random", base, p, "--amp", "0.3"}, args...), &out, &errb); err != nil {
			t.Fatal(err, errb.String())
		}
		return p
	}
	a := mk("a", "--rank", "8", "--seed", "1")
	b := mk("b.gguf", "--rank", "16", "--seed", "2")
	c := mk("c", "--rank", "8", "--seed", "3", "--target-modules", "q_proj,v_proj")
	big := mk("big", "--rank", "32", "--seed", "4")
	other := filepath.Join(dir, "other.gguf")
	writeSynthF32(t, other)
	wrongBase := filepath.Join(dir, "wrong")
	if err := runLoRA([]string{"random", other, wrongBase}, &out, &errb); err != nil {
		t.Fatal(err)
	}

	url, logs, stop := startServe(t, base, "--threads", "1", "--batch-invariant", "--enable-lora",
		"--lora-modules", "a="+a, "b="+b, "--max-loras", "3", "--max-lora-rank", "16")
	defer func() {
		if err := stop(); err != nil {
			t.Error(err, logs.String())
		}
	}()

	// /v1/models: the base, then the adapters with parent = the base.
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var ml api.ModelList
	json.NewDecoder(resp.Body).Decode(&ml)
	resp.Body.Close()
	if len(ml.Data) != 3 || ml.Data[1].ID != "a" || ml.Data[1].Parent != ml.Data[0].ID || ml.Data[2].Root != b {
		t.Fatalf("/v1/models: %+v", ml.Data)
	}
	baseName := ml.Data[0].ID

	// Each alone, then all at once (several times each): the same text.
	prompts := []string{"Once upon a time", "The little dog", "She said"}
	models := []string{baseName, "a", "b"}
	alone := map[string]string{}
	for _, m := range models {
		for _, p := range prompts {
			alone[m+"|"+p] = complete(t, url, m, p)
		}
	}
	if alone["a|Once upon a time"] == alone[baseName+"|Once upon a time"] || alone["b|The little dog"] == alone[baseName+"|The little dog"] || alone["a|She said"] == alone["b|She said"] {
		t.Fatalf("the adapters do not change the output: %q", alone)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for rep := 0; rep < 2; rep++ {
		for _, m := range models {
			for _, p := range prompts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got := complete(t, url, m, p)
					mu.Lock()
					defer mu.Unlock()
					if got != alone[m+"|"+p] {
						t.Errorf("model %s prompt %q: batched %q, alone %q", m, p, got, alone[m+"|"+p])
					}
				}()
			}
		}
	}
	wg.Wait()

	// Unknown adapter: 404 in OpenAI's shape.
	code, body := postJSON(t, url+"/v1/completions", `{"model": "nope", "prompt": "x", "max_tokens": 2}`)
	var eb api.ErrorResponse
	if code != 404 || json.Unmarshal(body, &eb) != nil || eb.Error.Code != "model_not_found" || eb.Error.Type != "invalid_request_error" ||
		!strings.Contains(eb.Error.Message, ", a, b)") {
		t.Errorf("unknown adapter (want 404 naming the served base and adapters a, b): %d %s", code, body)
	}
	// Rank above --max-lora-rank, an adapter for another base, a duplicate name, one past --max-loras.
	if code, body = postJSON(t, url+"/v1/load_lora_adapter", `{"lora_name": "big", "lora_path": "`+big+`"}`); code != 400 || !strings.Contains(string(body), "above --max-lora-rank 16") {
		t.Errorf("rank 32: %d %s", code, body)
	}
	if code, body = postJSON(t, url+"/v1/load_lora_adapter", `{"lora_name": "w", "lora_path": "`+wrongBase+`"}`); code != 400 || !strings.Contains(string(body), "lora_A.weight") || !strings.Contains(string(body), "another base") {
		t.Errorf("wrong base: %d %s", code, body)
	}
	if code, body = postJSON(t, url+"/v1/load_lora_adapter", `{"lora_name": "a", "lora_path": "`+c+`"}`); code != 400 {
		t.Errorf("duplicate name: %d %s", code, body)
	}
	// Load c, use it, unload it.
	if code, body = postJSON(t, url+"/v1/load_lora_adapter", `{"lora_name": "c", "lora_path": "`+c+`"}`); code != 200 || !strings.Contains(string(body), "Success") {
		t.Fatalf("load c: %d %s", code, body)
	}
	if code, body = postJSON(t, url+"/v1/load_lora_adapter", `{"lora_name": "d", "lora_path": "`+c+`"}`); code != 400 || !strings.Contains(string(body), "--max-loras 3") {
		t.Errorf("past --max-loras: %d %s", code, body)
	}
	// Prefix cache: c's prompt, already computed under the base model, hits nothing.
	long := "Once upon a time there was a little girl named Lily who loved to play outside in the sun with her dog and her friends every day"
	complete(t, url, baseName, long)
	complete(t, url, baseName, long)
	hits := metricValue(t, url, "vllm:prefix_cache_hits_total")
	if hits == 0 {
		t.Fatal("the base model's repeated prompt did not hit the prefix cache")
	}
	complete(t, url, "c", long)
	if h := metricValue(t, url, "vllm:prefix_cache_hits_total"); h != hits {
		t.Errorf("adapter c's prompt hit %g tokens cached under the base model", h-hits)
	}
	if code, body = postJSON(t, url+"/v1/unload_lora_adapter", `{"lora_name": "c"}`); code != 200 {
		t.Fatalf("unload c: %d %s", code, body)
	}
	if code, _ = postJSON(t, url+"/v1/completions", `{"model": "c", "prompt": "x", "max_tokens": 2}`); code != 404 {
		t.Errorf("unloaded adapter: %d", code)
	}
	if code, body = postJSON(t, url+"/v1/unload_lora_adapter", `{"lora_name": "c"}`); code != 404 || json.Unmarshal(body, &eb) != nil {
		t.Errorf("unload twice: %d %s", code, body)
	}
}
