package router

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/router/routertest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const plainBody = `{"model":"test","prompt":"hi","max_tokens":4}`

// statusOf is the status of the backend at url.
func statusOf(t *testing.T, r *Router, url string) BackendStatus {
	t.Helper()
	for _, s := range r.Backends() {
		if s.URL == url {
			return s
		}
	}
	t.Fatalf("no backend %s", url)
	return BackendStatus{}
}

// runWatch runs only the stall and latency checker (no probes) until the test ends: enough for
// a single backend (with peers, the stall check wants to hear from them).
func runWatch(t *testing.T, r *Router) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.watch(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// probeOnly probes the backend at url every 50 ms until the test ends.
func probeOnly(t *testing.T, r *Router, url string) {
	var b *backend
	r.mu.RLock()
	for _, x := range r.backends {
		if x.url == url {
			b = x
		}
	}
	r.mu.RUnlock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			r.check(ctx, b)
			time.Sleep(50 * time.Millisecond)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// runProbes runs Run until the test ends.
func runProbes(t *testing.T, r *Router) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// readSSE reads a streamed answer to its end: the data payloads and the read error.
func readSSE(t *testing.T, resp *http.Response) ([]string, error) {
	t.Helper()
	defer resp.Body.Close()
	var events []string
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			events = append(events, p)
		}
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, err
		}
	}
}

// A frozen backend (connections accepted, nothing answered) with a request waiting is ejected
// for a stall; its requests are retried elsewhere, even with retries off.
func TestStallEjectsAndRetries(t *testing.T) {
	a, b := routertest.New("a", 3, time.Millisecond), routertest.New("b", 3, time.Millisecond)
	// Only b is probed (a probe timeout would eject a before the stall check): the stall check
	// wants to hear from a healthy peer.
	r, front, srvs := start(t, Options{MaxRetries: -1, HealthInterval: 100 * time.Millisecond,
		HealthTimeout: 100 * time.Millisecond, StallTimeout: 300 * time.Millisecond}, a, b)
	runWatch(t, r)
	probeOnly(t, r, srvs[1].URL)
	waitFor(t, 5*time.Second, "b up", func() bool { return statusOf(t, r, srvs[1].URL).Healthy })
	a.Freeze()
	t.Cleanup(a.Thaw)
	t0 := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			resp := post(t, front.URL+"/v1/completions", plainBody)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "b" {
				t.Errorf("%d from %q: %s", resp.StatusCode, resp.Header.Get("X-Backend"), body)
			}
		})
	}
	wg.Wait()
	s := statusOf(t, r, srvs[0].URL)
	t.Logf("all answered after %v; a: %+v", time.Since(t0), s)
	if s.Healthy || s.Reason != "stall" || s.Requests == 0 {
		t.Fatalf("frozen backend not ejected for a stall: %+v", s)
	}
	if n := testutil.ToFloat64(r.m.ejections.WithLabelValues(srvs[0].URL, "stall")); n != 1 {
		t.Fatalf("stall ejections %v, want 1", n)
	}
	if n := testutil.ToFloat64(r.m.retries); n < 1 {
		t.Fatalf("retries %v", n)
	}
}

// A stream whose backend freezes mid-way ends with the error event, cleanly, without [DONE].
func TestStallMidStreamGetsErrorEvent(t *testing.T) {
	a := routertest.New("a", 100, 10*time.Millisecond)
	r, front, srvs := start(t, Options{HealthInterval: 100 * time.Millisecond, HealthTimeout: 100 * time.Millisecond,
		StallTimeout: 300 * time.Millisecond}, a)
	runWatch(t, r)
	t.Cleanup(a.Thaw)
	resp := post(t, front.URL+"/v1/completions", streamBody, "X-Test-Tokens", "100")
	go func() { time.Sleep(100 * time.Millisecond); a.Freeze() }()
	t0 := time.Now()
	events, err := readSSE(t, resp)
	if err != nil {
		t.Fatalf("stream not ended cleanly: %v (%d events)", err, len(events))
	}
	last := events[len(events)-1]
	t.Logf("%d events in %v, last %s", len(events), time.Since(t0), last)
	if len(events) < 2 || !strings.Contains(last, `"code":"upstream_stalled"`) ||
		!strings.Contains(last, "router: backend "+srvs[0].URL+" stopped responding") {
		t.Fatalf("no error event at the end: %q", events)
	}
	if strings.Contains(strings.Join(events, "\n"), "[DONE]") {
		t.Fatal("[DONE] after a stall")
	}
	if s := statusOf(t, r, srvs[0].URL); s.Healthy || s.Reason != "stall" {
		t.Fatalf("%+v", s)
	}
}

// A stream that goes quiet for longer than StreamIdle ends with the error event; a healthy
// backend is not ejected for it.
func TestStreamIdleTimeout(t *testing.T) {
	a := routertest.New("a", 3, 0)
	r, front, srvs := start(t, Options{StreamIdle: 200 * time.Millisecond}, a)
	resp := post(t, front.URL+"/v1/completions", streamBody, "X-Test-ITL", "2s")
	events, err := readSSE(t, resp)
	if err != nil || len(events) != 2 || !strings.Contains(events[1], "nothing for 200ms") ||
		!strings.Contains(events[1], `"type":"server_error"`) {
		t.Fatalf("%v %q", err, events)
	}
	if s := statusOf(t, r, srvs[0].URL); s.Reason != "" || s.Failures != 1 {
		t.Fatalf("%+v", s)
	}
	// Not SSE: the connection is cut.
	_, front2, _ := start(t, Options{StreamIdle: 200 * time.Millisecond}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	resp = post(t, front2.URL+"/v1/completions", plainBody)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("idle non-SSE body read as complete: %q", body)
	}
}

// A backend that sends no byte within the TTFB timeout is ejected (reason ttfb) and the request
// is answered by another.
func TestTTFBTimeoutRetries(t *testing.T) {
	slow, fast := routertest.New("slow", 1, 0), routertest.New("fast", 1, 0)
	slow.TTFT = 5 * time.Second
	r, front, srvs := start(t, Options{TTFBTimeout: 200 * time.Millisecond}, slow, fast)
	for range 2 {
		t0 := time.Now()
		resp := post(t, front.URL+"/v1/completions", plainBody)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Backend") != "fast" || time.Since(t0) > 3*time.Second {
			t.Fatalf("%d from %q after %v", resp.StatusCode, resp.Header.Get("X-Backend"), time.Since(t0))
		}
	}
	if s := statusOf(t, r, srvs[0].URL); s.Healthy || s.Reason != "ttfb" || slow.Requests() != 1 {
		t.Fatalf("%+v, %d requests", s, slow.Requests())
	}
	if n := testutil.ToFloat64(r.m.ejections.WithLabelValues(srvs[0].URL, "ttfb")); n != 1 {
		t.Fatalf("ttfb ejections %v", n)
	}
	resp, _ := http.Get(front.URL + "/router/status")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"ejected_by": "ttfb"`) {
		t.Fatalf("status: %s", body)
	}
}

// A backend whose probes are slow compared with its peers is ejected for the ejection period,
// and comes back after it (not before) once its probes are fast again.
func TestLatencyOutlierEjectedAndRestored(t *testing.T) {
	bs := []*routertest.Backend{routertest.New("a", 1, 0), routertest.New("b", 1, 0), routertest.New("c", 1, 0)}
	bs[0].SetHealthDelay(150 * time.Millisecond)
	period := time.Second
	r, _, srvs := start(t, Options{HealthInterval: 50 * time.Millisecond, HealthTimeout: 400 * time.Millisecond,
		StallTimeout: time.Second, OutlierFloor: 100 * time.Millisecond, EjectionPeriod: period},
		bs[0], bs[1], bs[2])
	runProbes(t, r)
	waitFor(t, 5*time.Second, "latency ejection", func() bool { s := statusOf(t, r, srvs[0].URL); return s.Reason == "latency" })
	out := time.Now()
	bs[0].SetHealthDelay(0)
	t.Logf("ejected: %+v", statusOf(t, r, srvs[0].URL))
	back := waitFor(t, 5*time.Second, "restore", func() bool { return statusOf(t, r, srvs[0].URL).Healthy })
	t.Logf("back after %v (period %v)", back, period)
	if time.Since(out) < period*8/10 {
		t.Fatalf("back after %v, before the ejection period %v", time.Since(out), period)
	}
	for _, u := range srvs[1:] {
		if s := statusOf(t, r, u.URL); !s.Healthy {
			t.Fatalf("a fast backend is out: %+v", s)
		}
	}
	if n := testutil.ToFloat64(r.m.ejections.WithLabelValues(srvs[0].URL, "latency")); n != 1 {
		t.Fatalf("latency ejections %v", n)
	}
}

// With two of three backends slow, only one is ejected for latency (at most half).
func TestLatencyEjectsAtMostHalf(t *testing.T) {
	bs := []*routertest.Backend{routertest.New("a", 1, 0), routertest.New("b", 1, 0), routertest.New("c", 1, 0)}
	bs[1].SetHealthDelay(150 * time.Millisecond)
	bs[2].SetHealthDelay(150 * time.Millisecond)
	r, _, srvs := start(t, Options{HealthInterval: 50 * time.Millisecond, HealthTimeout: 400 * time.Millisecond,
		StallTimeout: time.Second, OutlierFloor: 100 * time.Millisecond, EjectionPeriod: 10 * time.Second},
		bs[0], bs[1], bs[2])
	runProbes(t, r)
	down := func() (n, latency int) {
		for _, s := range r.Backends() {
			if !s.Healthy {
				n++
			}
			if s.Reason == "latency" {
				latency++
			}
		}
		return n, latency
	}
	waitFor(t, 5*time.Second, "one latency ejection", func() bool { _, l := down(); return l == 1 })
	for t0 := time.Now(); time.Since(t0) < time.Second; time.Sleep(20 * time.Millisecond) {
		if n, _ := down(); n != 1 {
			t.Fatalf("%d of 3 out: %+v", n, r.Backends())
		}
	}
	if s := statusOf(t, r, srvs[0].URL); !s.Healthy {
		t.Fatalf("the fast backend is out: %+v", s)
	}
}

// The router's own endpoints answer other methods with 405 and Allow; nothing is proxied.
func TestOwnEndpointsMethodNotAllowed(t *testing.T) {
	a := routertest.New("a", 1, 0)
	_, front, _ := start(t, Options{}, a)
	for _, p := range []string{"/health", "/metrics", "/router/status"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(m, front.URL+p, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Fatalf("%s %s: %d Allow %q", m, p, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
		resp, err := http.Head(front.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound {
			t.Fatalf("HEAD %s: %d", p, resp.StatusCode)
		}
	}
	if a.Requests() != 0 {
		t.Fatalf("%d requests proxied", a.Requests())
	}
}

func TestStallTimeoutValidated(t *testing.T) {
	if _, err := New(Options{HealthInterval: time.Second, HealthTimeout: time.Second, StallTimeout: 1500 * time.Millisecond}); err == nil {
		t.Fatal("a stall timeout below interval + probe timeout accepted")
	}
	r, err := New(Options{HealthInterval: 3 * time.Second})
	if err != nil || r.opts.StallTimeout != 3500*time.Millisecond {
		t.Fatalf("%v, derived stall timeout %v", err, r.opts.StallTimeout)
	}
}

// A backend whose probe fails without timing out (a draining replica answers 503) is ejected,
// but the stream it is sending goes on to its end.
func TestProbeFailureLetsStreamsFinish(t *testing.T) {
	a := routertest.New("a", 30, 20*time.Millisecond)
	r, front, srvs := start(t, Options{HealthInterval: 50 * time.Millisecond}, a)
	runProbes(t, r)
	waitFor(t, 5*time.Second, "a up", func() bool { return healthyOf(r, 0) })
	resp := post(t, front.URL+"/v1/completions", streamBody)
	a.SetHealthy(false)
	events, err := readSSE(t, resp)
	if err != nil || len(events) != 31 || events[30] != "[DONE]" {
		t.Fatalf("%v: %d events, last %q", err, len(events), events[len(events)-1])
	}
	if s := statusOf(t, r, srvs[0].URL); s.Healthy || s.Reason != "probe" {
		t.Fatalf("%+v", s)
	}
}
