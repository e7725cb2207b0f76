package autoscale

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/router"
)

// The observer reads a real router's /router/status: healthy backends only, with their load.
func TestObserveRouter(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
		case "/metrics":
			w.Write([]byte("vllm:num_requests_running{model_name=\"m\"} 3\nvllm:num_requests_waiting{model_name=\"m\"} 7\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer up.Close()
	rt, err := router.New(router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The second backend refuses connections: unhealthy after the first probe.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	rt.SetBackends([]string{up.URL, down.URL})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { rt.Run(ctx); close(done) }()
	srv := httptest.NewServer(rt.Handler())
	defer srv.Close()
	obs := ObserveRouter(srv.Client(), srv.URL+"/")
	var s []Sample
	// Until the router's first probes and scrapes are in (they start at once).
	for range 500 {
		if s, err = obs(ctx); err == nil && len(s) == 1 && s[0].Waiting == 7 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || len(s) != 1 || s[0] != (Sample{Replica: up.URL, Waiting: 7, Running: 3, KVUsage: 0.5}) {
		t.Fatalf("samples %+v, err %v", s, err)
	}
	if _, err := ObserveRouter(srv.Client(), srv.URL+"/nope")(ctx); err == nil {
		t.Error("a 404 status page was accepted")
	}
	if _, err := ObserveRouter(nil, down.URL)(ctx); err == nil {
		t.Error("an unreachable router was accepted")
	}
	cancel()
	<-done
}
