package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
)

// logLines returns the JSON log lines in buf with msg, waiting up to 5 s for at least n (a
// line is written after the handler returns, so after the client may have its response).
func logLines(t *testing.T, buf *proc.Buffer, msg string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
				out = append(out, m)
			}
		}
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// send posts body to path with an optional X-Request-Id and returns the status and the
// response's X-Request-Id.
func send(t *testing.T, method, url, body, rid string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if rid != "" {
		req.Header.Set("X-Request-Id", rid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Request-Id"), string(b)
}

// TestAccessLogFailures: real requests that fail (a prompt over max-model-len, malformed JSON,
// an unknown model, an unknown endpoint) each give one warn line with the method, path, status,
// request id and reason, even with per-request logging off (--disable-log-requests).
func TestAccessLogFailures(t *testing.T) {
	var buf proc.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}, Logger: log}, nil)
	long := `{"prompt":"` + strings.Repeat(" x", 600) + `","max_tokens":4}`
	cases := []struct {
		method, path, body, rid string
		status                  int
		reason                  string
	}{
		{"POST", "/v1/completions", long, "too-long-1", 400, "tokens over the limit: max-model-len is 512"},
		{"POST", "/v1/completions", `{"prompt": "x",`, "", 400, "invalid JSON body"},
		{"POST", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, "", 404, `the model "gpt-9" does not exist`},
		{"GET", "/v1/nothing", ``, "", 404, "no endpoint GET /v1/nothing"},
	}
	for i, c := range cases {
		status, rid, body := send(t, c.method, ts.url+c.path, c.body, c.rid)
		if status != c.status || rid == "" || (c.rid != "" && rid != c.rid) {
			t.Fatalf("%s %s: status %d request id %q: %s", c.method, c.path, status, rid, body)
		}
		lines := logLines(t, &buf, "request failed", i+1)
		if len(lines) != i+1 {
			t.Fatalf("%s %s: %d failure lines:\n%s", c.method, c.path, len(lines), buf.String())
		}
		l := lines[i]
		if l["level"] != "WARN" || l["method"] != c.method || l["path"] != c.path || l["status"] != float64(c.status) ||
			l["request_id"] != rid || !strings.Contains(l["reason"].(string), c.reason) || l["duration"] == nil {
			t.Errorf("log line %v, want status %d, request id %q, reason %q", l, c.status, rid, c.reason)
		}
	}
	if n := len(logLines(t, &buf, "response", 0)); n != 0 {
		t.Errorf("%d success lines without LogRequests", n)
	}
}

// TestAccessLogRequests: with LogRequests, a successful completion gives an info line, and its
// request id (made by the server when the client sends none) names the completion and is on
// the engine's per-request line too; /health logs at debug.
func TestAccessLogRequests(t *testing.T) {
	var buf proc.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}, Logger: log, LogRequests: true}, nil)
	status, rid, body := send(t, "POST", ts.url+"/v1/completions", `{"prompt":"Once upon a time","max_tokens":3}`, "")
	if status != 200 || !strings.Contains(body, `"id":"cmpl-`+rid+`"`) {
		t.Fatalf("status %d request id %q: %s", status, rid, body)
	}
	if status, _, _ := send(t, "GET", ts.url+"/health", ``, ""); status != 200 {
		t.Fatalf("health %d", status)
	}
	lines := logLines(t, &buf, "response", 1)
	if len(lines) != 1 || lines[0]["level"] != "INFO" || lines[0]["status"] != float64(200) ||
		lines[0]["request_id"] != rid || lines[0]["path"] != "/v1/completions" {
		t.Fatalf("response lines %v\n%s", lines, buf.String())
	}
	eng := logLines(t, &buf, "request", 1)
	if len(eng) != 1 || eng[0]["request_id"] != rid || eng[0]["id"] != "cmpl-"+rid+"-0" {
		t.Errorf("engine lines %v", eng)
	}
}

// TestAccessLogPlainError: an error body written without writeError (http.Error) is the reason;
// a 500 logs at error level.
func TestAccessLogPlainError(t *testing.T) {
	var buf proc.Buffer
	s := New(Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	h := s.accessLog(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken\n", http.StatusInternalServerError)
	}))
	h.ServeHTTP(&recorder{h: http.Header{}}, mustReq("POST", "/x", ""))
	l := logLines(t, &buf, "request failed", 1)
	if len(l) != 1 || l[0]["level"] != "ERROR" || l[0]["reason"] != "broken" || l[0]["status"] != float64(500) {
		t.Errorf("lines %v", l)
	}
}
