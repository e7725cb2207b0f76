package bench

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench/benchtest"
)

type connKey struct{}

// A server that drops a kept-alive connection when the client reuses it (without reading the
// request or writing a byte, as llama-server was seen to do) must not fail requests: the client
// marks its POSTs idempotent, so net/http resends them on a new connection.
func TestReusedConnectionClosedByServer(t *testing.T) {
	inner := benchtest.Handler(func(int64, *http.Request) benchtest.Script { return benchtest.Script{Tokens: 3} }, false)
	var dropped atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.Context().Value(connKey{}).(*atomic.Int64)
		if n.Add(1) >= 2 { // a reused connection: hang up without a response
			dropped.Add(1)
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		inner.ServeHTTP(w, r)
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, new(atomic.Int64))
	}
	srv.Start()
	defer srv.Close()
	res := &Result{}
	cfg := Config{Client: newClient(srv.URL, false), Requests: wordRequests(t, 6, 4, 3),
		RequestRate: Rate(math.Inf(1)), MaxConcurrency: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	Run(ctx, cfg, res)
	if dropped.Load() == 0 {
		t.Fatal("the server never dropped a reused connection; the test exercises nothing")
	}
	if res.Completed != 6 || res.Failed != 0 {
		t.Fatalf("completed %d failed %d: %q", res.Completed, res.Failed, res.Errors)
	}
}

// One request at a time goes over one kept-alive connection: the client reads each response to
// its end (past [DONE], to the chunked terminator the server writes after it), which is when
// net/http puts the connection back in the pool.
func TestConnectionReused(t *testing.T) {
	for _, chat := range []bool{false, true} {
		inner := benchtest.Handler(func(int64, *http.Request) benchtest.Script { return benchtest.Script{Tokens: 2} }, false)
		var conns atomic.Int64
		srv := httptest.NewUnstartedServer(inner)
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		res := &Result{}
		cfg := Config{Client: newClient(srv.URL, chat), Requests: wordRequests(t, 200, 4, 2),
			RequestRate: Rate(math.Inf(1)), MaxConcurrency: 1}
		Run(context.Background(), cfg, res)
		srv.Close()
		if res.Completed != 200 {
			t.Fatalf("completed %d of 200: %q", res.Completed, res.Errors)
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("chat %v: 200 sequential requests opened %d connections, want 1", chat, n)
		}
	}
}
