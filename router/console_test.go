package router

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/router/routertest"
)

// Backends that are not llmcloud serve (no /console/api/*) keep the router's own view in the
// console, and their requests list is empty, not an error; GET / is the page only with UI, and
// the API key guards /console/api/* and /v1/* but not the page.
func TestConsoleOverForeignBackends(t *testing.T) {
	a := httptest.NewServer(routertest.New("a", 2, 0))
	defer a.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, withUI := range []bool{false, true} {
		r, err := New(Options{HealthInterval: 50 * time.Millisecond, UI: withUI, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		r.SetBackends([]string{a.URL, dead.URL})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			bs := r.Backends()
			if bs[0].Healthy != bs[1].Healthy && (len(bs[0].Models)+len(bs[1].Models)) > 0 && bs[0].LastError+bs[1].LastError != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("backends never probed: %+v", bs)
			}
		}
		srv := httptest.NewServer(r.Handler())
		get := func(path, key string) (int, string) {
			code, b := fixture.Get(t, srv.URL+path, key)
			return code, string(b)
		}
		code, body := get(console.CloudPath, "k")
		var c console.Cloud
		if code != 200 || json.Unmarshal([]byte(body), &c) != nil || len(c.Replicas) != 2 {
			t.Fatalf("cloud: %d %s", code, body)
		}
		for _, rep := range c.Replicas {
			switch rep.URL {
			case a.URL:
				if !rep.Healthy || rep.State != "ready" || rep.Model != "test" || rep.Name != strings.TrimPrefix(a.URL, "http://") {
					t.Errorf("foreign backend %+v", rep)
				}
			case dead.URL:
				if rep.Healthy || rep.State != "down" {
					t.Errorf("dead backend %+v", rep)
				}
			}
		}
		if code, body := get(console.RequestsPath, "k"); code != 200 || strings.TrimSpace(body) != `{"requests":[]}` {
			t.Errorf("requests over foreign backends: %d %s", code, body)
		}
		if code, _ := get(console.RequestsPath+"?limit=x", "k"); code != 400 {
			t.Errorf("?limit=x: %d, want 400", code)
		}
		for _, p := range []string{console.CloudPath, "/v1/models"} {
			if code, _ := get(p, ""); code != 401 {
				t.Errorf("%s without the key: %d, want 401", p, code)
			}
		}
		code, body = get("/", "")
		switch {
		case withUI && (code != 200 || !strings.Contains(body, `content="router"`)):
			t.Errorf("GET / with UI: %d", code)
		case !withUI && code == 200 && strings.Contains(body, "llmcloud-mode"):
			t.Errorf("GET / without UI served the page")
		}
		srv.Close()
		cancel()
		<-done
	}
}
