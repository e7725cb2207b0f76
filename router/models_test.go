package router

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/router/routertest"
)

// runRouter runs r's probes until the test ends and waits until want holds for every backend.
func runRouter(t *testing.T, r *Router, want func(BackendStatus) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitModels(t, r, want)
}

// waitModels waits until want holds for every backend.
func waitModels(t *testing.T, r *Router, want func(BackendStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok := true
		for _, b := range r.Backends() {
			ok = ok && b.Healthy && want(b)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backends never got there: %+v", r.Backends())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func modelBody(model string) string {
	return `{"model":"` + model + `","prompt":"Once upon a time there was a little dog who liked to run in the park.","max_tokens":1,"stream":true}`
}

func chatBody(model string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`
}

// TestAdapterAffinityOverHTTP: two replicas of one base with different LoRA adapters (as
// `llmcloud serve --enable-lora --lora-modules` lists them). Adapter requests land on the
// replica that has the adapter under every policy, the base model goes to both, an unknown
// model is a 404 in OpenAI's shape that reaches no replica, and an adapter loaded later on the
// other replica is learned at the next probe.
func TestAdapterAffinityOverHTTP(t *testing.T) {
	for _, pol := range []string{RoundRobin, LeastLoad, Session, Prefix} {
		t.Run(pol, func(t *testing.T) {
			a, b := routertest.New("a", 1, 0), routertest.New("b", 1, 0)
			a.SetModels("base", "sql-lora")
			b.SetModels("base", "chat-lora", "poem-lora")
			r, front, srvs := start(t, Options{Policy: pol, HealthInterval: 20 * time.Millisecond}, a, b)
			runRouter(t, r, func(s BackendStatus) bool { return len(s.Models) > 0 })
			urlOf := map[string]string{srvs[0].URL: "a", srvs[1].URL: "b"}
			for _, s := range r.Backends() {
				want := []string{"base", "sql-lora"}
				if urlOf[s.URL] == "b" {
					want = []string{"base", "chat-lora", "poem-lora"}
				}
				slices.Sort(want)
				if !slices.Equal(s.Models, want) {
					t.Fatalf("%s lists %v, want %v", urlOf[s.URL], s.Models, want)
				}
			}

			for i := range 8 {
				hdr := []string{SessionHeader, string(rune('k' + i))}
				if got := backendOf(t, front.URL, "/v1/completions", modelBody("sql-lora"), hdr...); got != "a" {
					t.Fatalf("sql-lora request %d went to %s", i, got)
				}
				if got := backendOf(t, front.URL, "/v1/completions", modelBody("chat-lora"), hdr...); got != "b" {
					t.Fatalf("chat-lora request %d went to %s", i, got)
				}
				if got := backendOf(t, front.URL, "/v1/chat/completions", chatBody("poem-lora"), hdr...); got != "b" {
					t.Fatalf("poem-lora chat request %d went to %s", i, got)
				}
			}

			// The base model, and a request naming none, may go anywhere.
			seen := map[string]bool{}
			for i := range 16 {
				hdr := []string{SessionHeader, string(rune('A' + i))}
				seen[backendOf(t, front.URL, "/v1/completions", modelBody("base"), hdr...)] = true
				seen[backendOf(t, front.URL, "/v1/completions", `{"prompt":"hi","max_tokens":1}`, hdr...)] = true
			}
			if !seen["a"] || !seen["b"] {
				t.Fatalf("base-model requests only reached %v", seen)
			}

			// An unknown model: 404 as a server answers it, and no replica sees the request.
			before := a.Requests() + b.Requests()
			for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
				body := modelBody("nope-lora")
				if path == "/v1/chat/completions" {
					body = chatBody("nope-lora")
				}
				resp := post(t, front.URL+path, body)
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var e api.ErrorResponse
				if resp.StatusCode != 404 || json.Unmarshal(data, &e) != nil || e.Error.Code != "model_not_found" ||
					e.Error.Type != "invalid_request_error" || e.Error.Param == nil || *e.Error.Param != "model" ||
					resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get(RequestIDHeader) == "" {
					t.Fatalf("%s for an unknown model: %d %s %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), data)
				}
				t.Logf("%s", data)
			}
			if n := a.Requests() + b.Requests() - before; n != 0 {
				t.Fatalf("%d requests for an unknown model reached a replica", n)
			}

			// b loads sql-lora (POST /v1/load_lora_adapter): the next probe spreads it over both.
			b.SetModels("base", "chat-lora", "poem-lora", "sql-lora")
			waitModels(t, r, func(s BackendStatus) bool { return slices.Contains(s.Models, "sql-lora") })
			seen = map[string]bool{}
			for i := range 16 {
				seen[backendOf(t, front.URL, "/v1/completions", modelBody("sql-lora"), SessionHeader, string(rune('a'+i)))] = true
			}
			if !seen["a"] || !seen["b"] {
				t.Fatalf("sql-lora on both replicas, requests only reached %v", seen)
			}
		})
	}
}

// TestModelAffinityWildcards: replicas that list no models (no /v1/models) keep the router's
// behaviour from before model affinity: any model goes to any of them, nothing is a 404. Beside
// replicas that list models, they take the models nobody lists.
func TestModelAffinityWildcards(t *testing.T) {
	a, b := routertest.New("a", 1, 0), routertest.New("b", 1, 0)
	a.SetModels()
	b.SetModels()
	r, front, srvs := start(t, Options{HealthInterval: 20 * time.Millisecond}, a, b)
	runRouter(t, r, func(s BackendStatus) bool { return s.Models == nil })
	seen := map[string]bool{}
	for range 4 {
		seen[backendOf(t, front.URL, "/v1/completions", modelBody("whatever-lora"))] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("bare replicas: requests only reached %v", seen)
	}

	// a now lists base and an adapter; b still lists nothing.
	a.SetModels("base", "sql-lora")
	aURL := srvs[0].URL
	waitModels(t, r, func(s BackendStatus) bool { return (s.URL == aURL) == (len(s.Models) == 2) })
	for range 4 {
		if got := backendOf(t, front.URL, "/v1/completions", modelBody("sql-lora")); got != "a" {
			t.Fatalf("sql-lora went to %s", got)
		}
		if got := backendOf(t, front.URL, "/v1/completions", modelBody("other-lora")); got != "b" {
			t.Fatalf("a model nobody lists went to %s, not the bare replica", got)
		}
	}
}

// BenchmarkParseModel: the cost of reading "model" from a request body (round-robin and
// least-load parse bodies only for it, and only while some backend lists models).
func BenchmarkParseModel(b *testing.B) {
	body := []byte(`{"model":"test","prompt":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20) + `","max_tokens":1,"stream":true,"user":"u1"}`)
	b.ReportAllocs()
	for b.Loop() {
		if in := parseInput(body, "", false, false, true); in.Model != "test" {
			b.Fatal(in)
		}
	}
}
