package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/router/routertest"
)

func TestRouterCommandFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--backend", "ftp://x"},
		{"--backend", "http://a:1", "--policy", "random"},
		{"--discovery", "dns"},
		{"--discovery", "kubernetes", "--backend", "http://a:1"},
		{"--discovery", "kubernetes"},
		{"--backend", "http://a:1", "extra"},
		{"--backend", "http://a:1", "--ttfb-timeout", "0s"},
		{"--backend", "http://a:1", "--stream-idle-timeout", "-1s"},
		{"--backend", "http://a:1", "--stall-timeout", "1s"},
		{"--backend", "http://a:1", "--health-interval", "2s", "--health-timeout", "1s", "--stall-timeout", "2500ms"},
		{"--backend", "http://a:1", "--outlier-factor", "0.5"},
	} {
		var stderr bytes.Buffer
		err := routerMain(context.Background(), args, &stderr, nil)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

func TestRouterTimeoutFlags(t *testing.T) {
	f := routerFlags{health: 3 * time.Second, healthTimeout: time.Second, timeout: time.Minute, ttfb: time.Second,
		idle: time.Second, stall: 1500 * time.Millisecond, outlierMin: time.Second, eject: time.Second}
	o, err := routerTimeouts(f, false)
	if err != nil || o.StallTimeout != 4*time.Second || o.OutlierFactor != -1 || o.HealthTimeout != time.Second {
		t.Fatalf("%v %+v", err, o)
	}
	if _, err := routerTimeouts(f, true); err == nil {
		t.Fatal("an explicit stall timeout below interval + probe timeout accepted")
	}
	var stderr bytes.Buffer
	routerMain(context.Background(), []string{"--help"}, &stderr, nil)
	for _, name := range []string{"-health-timeout", "-ttfb-timeout", "-stream-idle-timeout", "-stall-timeout",
		"-outlier-factor", "-outlier-min-latency", "-ejection-period"} {
		if !strings.Contains(stderr.String(), name) {
			t.Errorf("--help lacks %s", name)
		}
	}
}

func TestRouterCommandServes(t *testing.T) {
	a := httptest.NewServer(routertest.New("a", 3, 0))
	defer a.Close()
	b := httptest.NewServer(routertest.New("b", 3, 0))
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- routerMain(ctx, []string{"--host", "127.0.0.1", "--port", "0", "--policy", "least-load",
			"--backend", a.URL + "," + b.URL, "--health-interval", "50ms"}, &stderr, func(s string) { addr <- s })
	}()
	base := "http://" + <-addr
	deadline := time.Now().Add(5 * time.Second) // both probed up
	for {
		resp, err := http.Get(base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `"healthy_backends":2`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backends not up: %s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen := map[string]int{}
	for range 6 {
		resp, err := http.Post(base+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt":"x","max_tokens":3,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Count(string(body), "data: ") != 4 {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		seen[resp.Header.Get("X-Backend")]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("not spread: %v", seen)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"llmcloud_router_requests_total", "llmcloud_router_routing_decisions_total{policy=\"least-load\",reason=\"least_load\"} 6",
		"llmcloud_router_upstream_latency_seconds_bucket", "llmcloud_router_backend_healthy", "go_goroutines"} {
		if !strings.Contains(string(m), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no shutdown")
	}
}
