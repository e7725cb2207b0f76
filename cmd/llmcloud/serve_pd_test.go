// Tests of disaggregated prefill/decode end to end, over real sockets: serve replicas with
// --kv-role and `router --policy pd` in front, a random model, greedy outputs compared with one
// ordinary replica's, token for token.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/kvtransfer"
)

// pdModel writes a random 4-layer llama with a 1024-token context.
func pdModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pd.gguf")
	if err := runSynth([]string{"-ctx", "1024", "-dim", "64", "-layers", "4", "-heads", "4", "-kv-heads", "2",
		"-std", "0.3", "-seed", "3", "-o", path}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	return path
}

// pdPrompt is a prompt of about n tokens (the synth tokenizer: a token per byte).
func pdPrompt(n, seed int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(strconv.Itoa((i*7919 + seed*104729) % 1000))
		b.WriteByte(' ')
	}
	return b.String()
}

// pdComplete posts a greedy completion (streamed or not) and returns the text and usage's
// cached tokens (0 for a stream).
func pdComplete(t *testing.T, url, prompt string, maxTokens int, stream bool, header map[string]string) (string, int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": maxTokens, "temperature": 0, "ignore_eos": true, "stream": stream})
	req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if !stream {
		var c api.CompletionResponse
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		cached := 0
		if c.Usage != nil && c.Usage.PromptTokensDetails != nil {
			cached = c.Usage.PromptTokensDetails.CachedTokens
		}
		return c.Choices[0].Text, cached
	}
	r := api.NewSSEReader(resp.Body)
	var text strings.Builder
	for {
		data, err := r.Next()
		if errors.Is(err, api.ErrDone) {
			return text.String(), 0
		}
		if err != nil {
			t.Fatalf("stream: %v (so far %q)", err, text.String())
		}
		var c api.CompletionResponse
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Text)
		}
	}
}

// pdMetric reads one sample of url's /metrics (a missing series fails the test).
func pdMetric(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s/metrics has no %s", url, series)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// pdWaitMetric waits up to 5 s for a series to reach at least min (the router counts an
// overlapped prefill's outcome when the prefill's answer comes, which may be after the
// consumer's) and returns its last value.
func pdWaitMetric(t *testing.T, url, series string, min float64) float64 {
	t.Helper()
	v := pdMetric(t, url, series)
	for deadline := time.Now().Add(5 * time.Second); v < min && time.Now().Before(deadline); v = pdMetric(t, url, series) {
		time.Sleep(10 * time.Millisecond)
	}
	return v
}

// TestServePDTransfer: a consumer given the producer's address installs the prompt's KV (usage
// counts the transferred tokens as cached) and answers the ordinary replica's greedy text; a
// producer that is gone, or an address that is no producer, costs a logged, counted failure and
// the consumer computes the prompt itself, with the same text.
func TestServePDTransfer(t *testing.T) {
	path := pdModel(t)
	common := []string{path, "--threads", "1", "--batch-invariant"}
	plain, _, _ := startServe(t, common...)
	prod, _, stopProd := startServe(t, append(common, "--kv-role", "producer")...)
	cons, logs, _ := startServe(t, append(common, "--kv-role", "consumer", "--kv-transfer-timeout", "5s")...)
	prompt := pdPrompt(700, 1)
	want, _ := pdComplete(t, plain, prompt, 16, false, nil)

	pdComplete(t, prod, prompt, 1, false, nil)
	src := map[string]string{kvtransfer.SourceHeader: prod}
	got, cached := pdComplete(t, cons, prompt, 16, false, src)
	if got != want {
		t.Fatalf("through the transfer %q, one replica %q", got, want)
	}
	if cached < 640 {
		t.Errorf("the consumer's cached tokens %d: the transfer was not used", cached)
	}
	recv := `llmcloud:kv_transfer_bytes_total{direction="received"}`
	if r, s := pdMetric(t, cons, recv), pdMetric(t, prod, `llmcloud:kv_transfer_bytes_total{direction="sent"}`); r == 0 || r != s {
		t.Errorf("bytes received %v, sent %v", r, s)
	}

	// Not a producer: the ordinary replica answers 404 on the export path.
	prompt2 := pdPrompt(600, 2)
	want2, _ := pdComplete(t, plain, prompt2, 12, true, nil)
	got2, _ := pdComplete(t, cons, prompt2, 12, true, map[string]string{kvtransfer.SourceHeader: plain})
	if got2 != want2 {
		t.Fatalf("after a refused transfer %q, one replica %q", got2, want2)
	}
	// The producer is gone: nothing listens at its address.
	stopProd()
	prompt3 := pdPrompt(600, 3)
	want3, _ := pdComplete(t, plain, prompt3, 12, false, nil)
	got3, cached3 := pdComplete(t, cons, prompt3, 12, false, src)
	if got3 != want3 || cached3 != 0 {
		t.Fatalf("with the producer gone %q (cached %d), one replica %q", got3, cached3, want3)
	}
	if f := pdMetric(t, cons, `llmcloud:kv_transfer_failures_total{direction="received"}`); f != 2 {
		t.Errorf("failures %v, want 2", f)
	}
	if !strings.Contains(logs.String(), "KV transfer failed") {
		t.Errorf("no log line for the failed transfers:\n%s", logs.String())
	}
}

// TestServePDCutTransfer: a producer whose answer is cut in the middle of the blocks (a proxy
// that forwards half the stream, then resets the connection) is a failure; the consumer
// recomputes and answers the ordinary replica's text, and no KV block stays held (the consumer
// then serves a prompt needing the whole pool).
func TestServePDCutTransfer(t *testing.T) {
	path := pdModel(t)
	common := []string{path, "--threads", "1", "--batch-invariant"}
	prod, _, _ := startServe(t, append(common, "--kv-role", "producer")...)
	cons, _, _ := startServe(t, append(common, "--kv-role", "consumer")...)
	prompt := pdPrompt(700, 4)
	pdComplete(t, prod, prompt, 1, false, nil)
	cut := cuttingProxy(t, strings.TrimPrefix(prod, "http://"), 20000)
	got, cached := pdComplete(t, cons, prompt, 12, false, map[string]string{kvtransfer.SourceHeader: "http://" + cut})
	want, _ := pdComplete(t, prod, prompt, 12, false, nil)
	if got != want || cached != 0 {
		t.Fatalf("after a cut transfer %q (cached %d), producer alone %q", got, cached, want)
	}
	if f := pdMetric(t, cons, `llmcloud:kv_transfer_failures_total{direction="received"}`); f != 1 {
		t.Errorf("failures %v, want 1", f)
	}
	// The engine frees a request's blocks in its loop after the answer is sent: wait for it (a
	// held block stays held, so the wait ends at the deadline with usage above 0).
	usage := `vllm:kv_cache_usage_perc{model_name="synth-llama-3"}`
	u := pdMetric(t, cons, usage)
	for deadline := time.Now().Add(5 * time.Second); u != 0 && time.Now().Before(deadline); u = pdMetric(t, cons, usage) {
		time.Sleep(10 * time.Millisecond)
	}
	if u != 0 {
		t.Errorf("KV usage %v 5 s after the requests", u)
	}
}

// cuttingProxy forwards connections to target, passing at most limit bytes of each answer, then
// closing both sides.
func cuttingProxy(t *testing.T, target string, limit int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, io.LimitReader(u, limit))
			}()
		}
	}()
	return ln.Addr().String()
}

// startRouter runs `llmcloud router` over backends and waits until n of them are healthy.
func startRouter(t *testing.T, n int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- routerMain(ctx, append([]string{"--host", "127.0.0.1", "--port", "0", "--health-interval", "50ms"}, args...),
			io.Discard, func(s string) { addr <- s })
	}()
	base := "http://" + <-addr
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `"healthy_backends":`+strconv.Itoa(n)) {
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("backends not up: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRouterPD: through `router --policy pd` over a producer and a consumer, streamed and plain
// greedy completions equal one ordinary replica's, the consumer decodes with the transferred KV
// (its prefix-cache hits) and the producer computes the prompts; with the producer killed,
// requests still complete on the consumer alone (no_pair); under --pd-min-prompt-bytes a short
// prompt goes to the consumer alone.
func TestRouterPD(t *testing.T) {
	path := pdModel(t)
	common := []string{path, "--threads", "1", "--batch-invariant"}
	plain, _, _ := startServe(t, common...)
	prod, _, stopProd := startServe(t, append(common, "--kv-role", "producer")...)
	cons, _, _ := startServe(t, append(common, "--kv-role", "consumer")...)
	rt := startRouter(t, 2, "--policy", "pd", "--backend", prod+","+cons)
	deadline := time.Now().Add(10 * time.Second) // roles are learnt from /v1/models after a probe
	for time.Now().Before(deadline) && pdMetric(t, rt, `llmcloud_router_pd_requests_total{outcome="disaggregated"}`) == 0 {
		pdComplete(t, rt, "warm up", 2, false, nil)
	}
	hits0 := pdMetric(t, cons, `vllm:prefix_cache_hits_total{model_name="synth-llama-3"}`)
	for i, stream := range []bool{false, true} {
		prompt := pdPrompt(500+100*i, 10+i)
		want, _ := pdComplete(t, plain, prompt, 16, stream, nil)
		got, _ := pdComplete(t, rt, prompt, 16, stream, nil)
		if got != want {
			t.Fatalf("stream=%v: through pd %q, one replica %q", stream, got, want)
		}
	}
	if h := pdMetric(t, cons, `vllm:prefix_cache_hits_total{model_name="synth-llama-3"}`) - hits0; h < 1000 {
		t.Errorf("the consumer's prefix hits grew by %v tokens: the transfers were not used", h)
	}
	if d := pdWaitMetric(t, rt, `llmcloud_router_pd_requests_total{outcome="disaggregated"}`, 3); d < 3 {
		t.Errorf("disaggregated requests %v", d)
	}
	// Under --pd-min-prompt-bytes a short prompt goes to the consumer alone.
	rt2 := startRouter(t, 2, "--policy", "pd", "--pd-min-prompt-bytes", "1000", "--backend", prod+","+cons)
	deadline = time.Now().Add(10 * time.Second)
	short := pdPrompt(100, 30)
	want, _ := pdComplete(t, plain, short, 8, false, nil)
	for time.Now().Before(deadline) && pdMetric(t, rt2, `llmcloud_router_pd_requests_total{outcome="short_prompt"}`) == 0 {
		if got, _ := pdComplete(t, rt2, short, 8, false, nil); got != want {
			t.Fatalf("short prompt: %q, one replica %q", got, want)
		}
	}
	if n := pdMetric(t, rt2, `llmcloud_router_pd_requests_total{outcome="disaggregated"}`); n != 0 {
		t.Errorf("a short prompt was disaggregated (%v)", n)
	}
	stopProd()
	prompt := pdPrompt(500, 20)
	want, _ = pdComplete(t, plain, prompt, 8, true, nil)
	for range 3 {
		if got, _ := pdComplete(t, rt, prompt, 8, true, nil); got != want {
			t.Fatalf("producer down: %q, one replica %q", got, want)
		}
	}
}

// TestRouterPDProducerDiesMidPrefill: the producer's prefill connections die after the request
// is sent (a proxy that passes everything else to a real producer, and closes the connection
// of every completion it receives, as a killed process would): every request still completes
// with one ordinary replica's greedy text, the first through the consumer computing the prompt
// itself (prefill_failed), and none fails.
func TestRouterPDProducerDiesMidPrefill(t *testing.T) {
	path := pdModel(t)
	common := []string{path, "--threads", "1", "--batch-invariant"}
	plain, _, _ := startServe(t, common...)
	prod, _, _ := startServe(t, append(common, "--kv-role", "producer")...)
	// The export path still reaches the producer, which waits for a prefill that never comes:
	// the consumer's transfer gives up after its --kv-transfer-timeout.
	cons, _, _ := startServe(t, append(common, "--kv-role", "consumer", "--kv-transfer-timeout", "1s")...)
	target, _ := url.Parse(prod)
	rp := httputil.NewSingleHostReverseProxy(target)
	dying := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/completions" {
			io.Copy(io.Discard, r.Body)
			panic(http.ErrAbortHandler) // the connection is closed without an answer
		}
		rp.ServeHTTP(w, r)
	}))
	defer dying.Close()
	rt := startRouter(t, 2, "--policy", "pd", "--backend", dying.URL+","+cons)
	deadline := time.Now().Add(10 * time.Second) // until the roles are known and a prefill was tried
	for time.Now().Before(deadline) && pdMetric(t, rt, `llmcloud_router_pd_requests_total{outcome="prefill_failed"}`) == 0 {
		pdComplete(t, rt, "warm up", 2, false, nil)
	}
	if pdMetric(t, rt, `llmcloud_router_pd_requests_total{outcome="prefill_failed"}`) == 0 {
		t.Fatal("no prefill was tried on the dying producer")
	}
	for i, stream := range []bool{false, true, false} {
		prompt := pdPrompt(500, 40+i)
		want, _ := pdComplete(t, plain, prompt, 8, stream, nil)
		if got, _ := pdComplete(t, rt, prompt, 8, stream, nil); got != want {
			t.Fatalf("request %d: %q, one replica %q", i, got, want)
		}
	}
	if n := pdMetric(t, rt, `llmcloud_router_client_requests_total{code="200"}`); n < 4 {
		t.Errorf("%v requests answered 200", n)
	}
}
