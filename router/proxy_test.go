package router

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/router/routertest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// start runs backends on loopback sockets and a router in front of them.
func start(t *testing.T, opts Options, backends ...http.Handler) (*Router, *httptest.Server, []*httptest.Server) {
	t.Helper()
	var srvs []*httptest.Server
	var urls []string
	for _, h := range backends {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		srvs = append(srvs, s)
		urls = append(urls, s.URL)
	}
	if opts.Logger == nil && testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	reg := prometheus.NewRegistry()
	opts.Registerer = reg
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.SetBackends(urls)
	front := httptest.NewServer(r.Handler())
	t.Cleanup(front.Close)
	return r, front, srvs
}

func post(t *testing.T, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const streamBody = `{"model":"test","prompt":"hi","max_tokens":4,"stream":true}`

func TestStreamingPassthrough(t *testing.T) {
	_, front, _ := start(t, Options{}, routertest.New("a", 4, 80*time.Millisecond))
	t0 := time.Now()
	resp := post(t, front.URL+"/v1/completions", streamBody)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	var at []time.Duration
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if strings.HasPrefix(line, "data: ") {
			at = append(at, time.Since(t0))
		}
	}
	if len(at) != 5 { // 4 tokens + [DONE]
		t.Fatalf("%d events", len(at))
	}
	// Unbuffered: the first token arrives well before the last (3 gaps of 80 ms after it).
	if at[3]-at[0] < 200*time.Millisecond {
		t.Fatalf("events arrived together: %v", at)
	}
}

func TestRequestID(t *testing.T) {
	_, front, _ := start(t, Options{}, routertest.New("a", 1, 0))
	resp := post(t, front.URL+"/v1/completions", streamBody, "X-Request-Id", "abc-123")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := resp.Header.Values("X-Request-Id"); len(got) != 1 || got[0] != "abc-123" {
		t.Fatalf("passed through as %q", got)
	}
	resp = post(t, front.URL+"/v1/completions", streamBody)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if id := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(id, "rtr-") {
		t.Fatalf("generated id %q", id)
	}
}

func TestRetryOnDeadBackend(t *testing.T) {
	live := routertest.New("live", 2, 0)
	r, front, srvs := start(t, Options{Policy: RoundRobin, HealthInterval: time.Hour}, routertest.New("dead", 2, 0), live)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 2*time.Second, "first probe", func() bool { return healthyOf(r, 0) && healthyOf(r, 1) })
	srvs[0].Close() // connection refused from now on; no probe will notice for an hour
	for i := range 10 {
		resp := post(t, front.URL+"/v1/completions", streamBody)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "live" || !strings.Contains(string(b), "[DONE]") {
			t.Fatalf("request %d: %d from %q: %s", i, resp.StatusCode, resp.Header.Get("X-Backend"), b)
		}
	}
	if n := testutil.ToFloat64(r.m.retries); n != 1 {
		t.Fatalf("retries %v, want 1 (the dead backend is ejected after its first failure)", n)
	}
	st := r.Backends()
	if st[0].URL != srvs[0].URL {
		st[0], st[1] = st[1], st[0]
	}
	if st[0].Healthy || st[0].Failures != 1 || st[0].LastError == "" || !st[1].Healthy {
		t.Fatalf("status %+v", st)
	}
}

func Test5xxRetriedAndPreserved(t *testing.T) {
	fail := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", "fail")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"boom"}}`)
	})
	_, front, _ := start(t, Options{Policy: RoundRobin}, fail, routertest.New("ok", 1, 0))
	for range 3 {
		resp := post(t, front.URL+"/v1/completions", streamBody)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "ok" {
			t.Fatalf("%d from %q", resp.StatusCode, resp.Header.Get("X-Backend"))
		}
	}
	// When every backend fails, the client gets the upstream error as it was.
	_, front, _ = start(t, Options{}, fail, fail)
	resp := post(t, front.URL+"/v1/completions", streamBody)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || string(b) != `{"error":{"message":"boom"}}` {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func Test4xxNotRetried(t *testing.T) {
	a, b := routertest.New("a", 1, 0), routertest.New("b", 1, 0)
	r, front, _ := start(t, Options{}, a, b)
	resp := post(t, front.URL+"/v1/completions", streamBody, "X-Test-Status", "422")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 422 || !strings.Contains(string(body), "scripted status 422") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := a.Requests() + b.Requests(); n != 1 {
		t.Fatalf("%d upstream requests", n)
	}
	for _, s := range r.Backends() {
		if s.Failures != 0 || (s.Requests == 1 && !s.Healthy) {
			t.Fatalf("a 4xx counted against %+v", s)
		}
	}
}

func TestNoRetryAfterStreamStarted(t *testing.T) {
	var calls sync.Map
	cut := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Store(r.Host, true)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"text\":\"x\"}]}\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		panic(http.ErrAbortHandler)
	})
	r, front, _ := start(t, Options{}, cut, cut)
	resp := post(t, front.URL+"/v1/completions", streamBody)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The client sees why: a final error event, no [DONE].
	if err != nil || !strings.Contains(string(b), `"code":"upstream_error"`) || strings.Contains(string(b), "[DONE]") {
		t.Fatalf("a cut stream: err %v, body %q; want a final upstream_error event and no [DONE]", err, b)
	}
	if !strings.Contains(string(b), `"text":"x"`) {
		t.Fatalf("first chunk lost: %q", b)
	}
	n := 0
	calls.Range(func(any, any) bool { n++; return true })
	if n != 1 || testutil.ToFloat64(r.m.retries) != 0 {
		t.Fatalf("retried after streaming: %d backends called", n)
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	be := routertest.New("a", 1000, 10*time.Millisecond)
	_, front, _ := start(t, Options{}, be)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, front.URL+"/v1/completions", strings.NewReader(streamBody))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for be.Canceled() == 0 || be.Running() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("upstream still running (canceled %d, running %d)", be.Canceled(), be.Running())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRequestTimeout(t *testing.T) {
	_, front, _ := start(t, Options{RequestTimeout: 100 * time.Millisecond}, routertest.New("slow", 1, 0))
	resp := post(t, front.URL+"/v1/completions", streamBody, "X-Test-Tokens", "5", "X-Test-ITL", "1s")
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The first chunk arrived in time, so the stream starts and then ends with an error event.
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `"code":"upstream_error"`) || strings.Contains(string(b), "[DONE]") {
		t.Fatalf("%d %v %q", resp.StatusCode, err, b)
	}
}

func TestBodyTooLarge(t *testing.T) {
	be := routertest.New("a", 1, 0)
	_, front, _ := start(t, Options{MaxBodyBytes: 100}, be)
	resp := post(t, front.URL+"/v1/completions", `{"prompt":"`+strings.Repeat("x", 200)+`"}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || be.Requests() != 0 {
		t.Fatalf("%d, %d upstream", resp.StatusCode, be.Requests())
	}
}
