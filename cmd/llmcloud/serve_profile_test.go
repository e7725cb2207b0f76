// serve_profile_test.go checks serve --profiler-dir over HTTP: POST /start_profile, a
// completion, POST /stop_profile answers the path of a trace written into the directory, which
// holds the engine's steps and the model's ops; without the flag the endpoints are 404.
package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/profile"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeProfiler(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	dir := filepath.Join(t.TempDir(), "traces")
	url, _, stop := startServe(t, "--model", model, "--threads", "2", "--max-model-len", "256", "--profiler-dir", dir)
	if c, b := post(t, url+"/stop_profile", ""); c != http.StatusConflict {
		t.Errorf("stop before start: %d %s", c, b)
	}
	if c, b := post(t, url+"/start_profile", ""); c != 200 {
		t.Fatalf("start: %d %s", c, b)
	}
	if c, b := post(t, url+"/start_profile", ""); c != http.StatusConflict {
		t.Errorf("second start: %d %s", c, b)
	}
	if c, b := post(t, url+"/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}`); c != 200 {
		t.Fatalf("completion: %d %s", c, b)
	}
	c, b := post(t, url+"/stop_profile", "")
	if c != 200 {
		t.Fatalf("stop: %d %s", c, b)
	}
	var ans struct{ Trace string }
	if err := json.Unmarshal([]byte(b), &ans); err != nil || filepath.Dir(ans.Trace) != dir {
		t.Fatalf("stop answered %s (%v), want a trace in %s", b, err, dir)
	}
	data, err := os.ReadFile(ans.Trace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Validate(data); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"schedule"`, `"forward"`, `"sample"`, `"matmul"`, `"attention"`, `"worker 1"`} {
		if !strings.Contains(string(data), s) {
			t.Errorf("trace lacks %s", s)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	url, _, _ = startServe(t, "--model", model, "--threads", "1", "--max-model-len", "256")
	for _, p := range []string{"/start_profile", "/stop_profile"} {
		if c, b := post(t, url+p, ""); c != http.StatusNotFound || !strings.Contains(b, "--profiler-dir") {
			t.Errorf("%s without --profiler-dir: %d %s", p, c, b)
		}
	}
}
