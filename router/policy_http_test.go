package router

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/router/routertest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// backendOf sends body and returns the X-Backend that answered.
func backendOf(t *testing.T, url, path, body string, hdr ...string) string {
	t.Helper()
	resp := post(t, url+path, body, hdr...)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	return resp.Header.Get("X-Backend")
}

func TestPrefixPolicyOverHTTP(t *testing.T) {
	r, front, _ := start(t, Options{Policy: Prefix},
		routertest.New("a", 1, 0), routertest.New("b", 1, 0), routertest.New("c", 1, 0))
	system := strings.Repeat("You are a careful assistant who answers in French. ", 8)
	chat := func(q string) string {
		b, _ := json.Marshal(map[string]any{"model": "test", "stream": true, "max_tokens": 1,
			"messages": []map[string]string{{"role": "system", "content": system}, {"role": "user", "content": q}}})
		return string(b)
	}
	first := backendOf(t, front.URL, "/v1/chat/completions", chat("q0"))
	for i := 1; i < 10; i++ {
		if got := backendOf(t, front.URL, "/v1/chat/completions", chat(fmt.Sprint("question ", i))); got != first {
			t.Fatalf("request %d with the same system prompt went to %s, not %s", i, got, first)
		}
	}
	// Completions with token-id prompts share prefixes too.
	ids := strings.Repeat("1234, ", 40)
	p0 := backendOf(t, front.URL, "/v1/completions", `{"prompt":[`+ids+`1],"max_tokens":1,"stream":true}`)
	if got := backendOf(t, front.URL, "/v1/completions", `{"prompt":[`+ids+`2, 3],"max_tokens":1,"stream":true}`); got != p0 {
		t.Fatalf("token-id prompt with a shared prefix went to %s, not %s", got, p0)
	}
	if l, h := testutil.ToFloat64(r.m.lookups), testutil.ToFloat64(r.m.hits); l != 12 || h != 10 {
		t.Fatalf("prefix lookups %v hits %v, want 12 and 10", l, h)
	}
	if n := testutil.ToFloat64(r.m.decisions.WithLabelValues(Prefix, ReasonPrefixHit)); n != 10 {
		t.Fatalf("prefix_hit decisions %v", n)
	}
}

func TestSessionPolicyOverHTTP(t *testing.T) {
	_, front, _ := start(t, Options{Policy: Session},
		routertest.New("a", 1, 0), routertest.New("b", 1, 0), routertest.New("c", 1, 0))
	seen := map[string]bool{}
	for s := range 12 {
		id := fmt.Sprint("session-", s)
		want := backendOf(t, front.URL, "/v1/completions", streamBody, SessionHeader, id)
		seen[want] = true
		for range 3 {
			if got := backendOf(t, front.URL, "/v1/completions", streamBody, SessionHeader, id); got != want {
				t.Fatalf("%s moved from %s to %s", id, want, got)
			}
		}
		// The body's user field is the key when the header is absent.
		body := `{"model":"test","prompt":"hi","max_tokens":1,"stream":true,"user":"` + id + `"}`
		u := backendOf(t, front.URL, "/v1/completions", body)
		if got := backendOf(t, front.URL, "/v1/completions", body); got != u {
			t.Fatalf("user %s moved from %s to %s", id, u, got)
		}
	}
	if len(seen) < 2 {
		t.Fatalf("12 sessions all on %v", seen)
	}
}
