// console_router_test.go checks the router's console endpoints over two real serve replicas:
// both listed with their own counters, their requests merged with the replica named, the page
// at / unless --no-ui, and --api-key guarding /console/api/* (and reaching the backends).
package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/router"
)

// startConsoleRouter runs the router command in-process over backends and waits until want are healthy.
func startConsoleRouter(t *testing.T, want int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- routerMain(ctx, append([]string{"--host", "127.0.0.1", "--port", "0", "--health-interval", "100ms"}, args...),
			io.Discard, func(s string) { addr <- s })
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		cancel()
		t.Fatalf("router: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("router did not stop")
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body := status(t, base+"/health", "")
		if strings.Contains(body, `"healthy_backends":`+itoa(want)) {
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("backends not up: %s", body)
		}
	}
}

func TestRouterConsoleAggregates(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	a, _, _ := startServe(t, model, "--threads", "1", "--max-model-len", "128", "--api-key", "k", "--served-model-name", "s260k")
	b, _, _ := startServe(t, model, "--threads", "1", "--max-model-len", "128", "--api-key", "k", "--served-model-name", "s260k")
	base := startConsoleRouter(t, 2, "--backend", a+","+b, "--policy", "round-robin", "--api-key", "k")

	for range 4 {
		if code := postKey(t, base+"/v1/completions", "k", `{"prompt":"Once upon","max_tokens":5,"ignore_eos":true}`); code != 200 {
			t.Fatalf("completion through the router: %d", code)
		}
	}

	if code, body := status(t, base+"/", ""); code != 200 || !strings.Contains(body, `content="router"`) {
		t.Errorf("GET / on the router: %d, want the page in router mode", code)
	}
	if code, _ := status(t, base+console.CloudPath, ""); code != 401 {
		t.Errorf("router /console/api/cloud without the key: %d, want 401", code)
	}
	var c console.Cloud
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := status(t, base+console.CloudPath, "k")
		if code != 200 || json.Unmarshal([]byte(body), &c) != nil {
			t.Fatalf("cloud: %d %s", code, body)
		}
		// A replica whose scrape missed the health timeout (a loaded machine) shows the
		// router's view only: ask again.
		if len(c.Replicas) == 2 && c.Replicas[0].Model != "" && c.Replicas[1].Model != "" || time.Now().After(deadline) {
			break
		}
	}
	if c.Mode != "router" || c.HealthInterval != 0.1 || len(c.Replicas) != 2 || c.Autoscale == nil {
		t.Fatalf("cloud %+v", c)
	}
	var gen, reqs int64
	names := map[string]bool{}
	for _, r := range c.Replicas {
		if !r.Healthy || r.State != "ready" || r.Model != "s260k" || r.Role != "both" || r.URL == "" {
			t.Errorf("replica %+v", r)
		}
		if r.Name != router.ReplicaName(r.URL) {
			t.Errorf("replica name %q for %s", r.Name, r.URL)
		}
		names[r.Name] = true
		gen += r.GenerationTokens
		reqs += r.Requests
	}
	if gen != 20 || reqs != 4 {
		t.Errorf("fleet counters: %d generation tokens, %d requests; want 20, 4 (from the replicas' own entries)", gen, reqs)
	}

	rs := requestsUntil(t, base+console.RequestsPath+"?limit=3", "k", 3)
	for i, tr := range rs.Requests {
		if !names[tr.Replica] || tr.OutputTokens != 5 || tr.FinishReason != "length" {
			t.Errorf("trace %+v", tr)
		}
		if i > 0 && tr.ArrivalUnix+tr.E2EMs/1e3 > rs.Requests[i-1].ArrivalUnix+rs.Requests[i-1].E2EMs/1e3 {
			t.Errorf("traces not newest first: %+v", rs.Requests)
		}
	}

	// --no-ui: / is proxied like any path (these backends serve no page: 404).
	c1, _, _ := startServe(t, model, "--threads", "1", "--max-model-len", "128", "--no-ui")
	off := startConsoleRouter(t, 1, "--backend", c1, "--no-ui")
	if code, _ := status(t, off+"/", ""); code != 404 {
		t.Errorf("GET / on a --no-ui router over a --no-ui replica: %d, want 404", code)
	}
	if code, _ := status(t, off+"/v1/models", ""); code != 200 {
		t.Errorf("GET /v1/models through the --no-ui router: %d", code)
	}
	if code, _ := status(t, off+console.CloudPath, ""); code != 200 {
		t.Errorf("GET /console/api/cloud on a --no-ui router: %d", code)
	}
}

// requestsUntil GETs a /console/api/requests URL until it lists want traces (a replica whose
// answer missed the health timeout on a loaded machine is left out of one answer), at most 5 s.
func requestsUntil(t *testing.T, url, key string, want int) console.Requests {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var rs console.Requests
		code, body := status(t, url, key)
		if code != 200 || json.Unmarshal([]byte(body), &rs) != nil {
			t.Fatalf("requests: %d %s", code, body)
		}
		if len(rs.Requests) == want {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests: %d traces, want %d: %s", len(rs.Requests), want, body)
		}
	}
}
