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
	inner := benchtest.Handler(func(int64, *http.Request) benchtest.Script { return benchtest.Script{Tokens: 3} })
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
