package router

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/router/routertest"
)

// countConns starts h on loopback and counts the connections it accepts.
func countConns(t *testing.T, h http.Handler, idle time.Duration) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewUnstartedServer(h)
	s.Config.IdleTimeout = idle
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &n
}

func routerTo(t *testing.T, urls ...string) (*Router, string) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.SetBackends(urls)
	front := httptest.NewServer(r.Handler())
	t.Cleanup(front.Close)
	return r, front.URL
}

func TestPoolReusesConnections(t *testing.T) {
	be, conns := countConns(t, routertest.New("a", 3, 0), time.Minute)
	_, front := routerTo(t, be.URL)
	for i := range 20 {
		resp := post(t, front+"/v1/completions", streamBody)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d upstream connections for 20 sequential requests, want 1", n)
	}
}

func TestPoolStaleConnectionIsNotAFailure(t *testing.T) {
	// The backend closes idle connections after 5 ms; the router's pooled ones go stale
	// between requests and must be replaced without a failure or an ejection.
	be, conns := countConns(t, routertest.New("a", 2, 0), 5*time.Millisecond)
	r, front := routerTo(t, be.URL)
	for i := range 8 {
		resp := post(t, front+"/v1/completions", streamBody)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
		time.Sleep(30 * time.Millisecond)
	}
	st := r.Backends()[0]
	if st.Failures != 0 || !st.Healthy || st.Requests != 8 {
		t.Fatalf("status %+v", st)
	}
	if conns.Load() < 2 {
		t.Fatalf("%d connections: the idle timeout never bit, the test proves nothing", conns.Load())
	}
}

func TestPoolForwardsRequest(t *testing.T) {
	var got *http.Request
	var gotBody string
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, gotBody = r.Clone(r.Context()), string(b)
		w.Header().Set("X-Upstream", "yes")
		w.Header().Set("Connection", "keep-alive")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "created")
	}))
	defer be.Close()
	_, front := routerTo(t, be.URL+"/prefix/")
	req, _ := http.NewRequest(http.MethodPost, front+"/v1/things?a=1&b=%20x", strings.NewReader(`{"x":1}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Set("Proxy-Authorization", "secret")
	req.Header.Set("Te", "trailers")
	req.Header.Set("X-Forwarded-For", "10.9.9.9")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(b) != "created" || resp.Header.Get("X-Upstream") != "yes" {
		t.Fatalf("response %d %q %v", resp.StatusCode, b, resp.Header)
	}
	if got.URL.Path != "/prefix/v1/things" || got.URL.RawQuery != "a=1&b=%20x" || gotBody != `{"x":1}` {
		t.Fatalf("upstream got %s %s?%s %q", got.Method, got.URL.Path, got.URL.RawQuery, gotBody)
	}
	h := got.Header
	if h.Get("Authorization") != "Bearer k" || strings.Join(h.Values("X-Multi"), ",") != "one,two" ||
		h.Get("Proxy-Authorization") != "" || h.Get("Te") != "" || !strings.HasPrefix(h.Get("X-Forwarded-For"), "10.9.9.9, 127.0.0.1") ||
		!strings.HasPrefix(h.Get("X-Request-Id"), "rtr-") {
		t.Fatalf("upstream headers %v", h)
	}
}
