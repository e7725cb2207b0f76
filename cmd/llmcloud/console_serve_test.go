// console_serve_test.go checks the console on the serve command: the page at / unless --no-ui,
// open with --api-key while /console/api/* asks for the key.
package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

// status GETs url with an optional key and returns the status and body.
func status(t *testing.T, url, key string) (int, string) {
	t.Helper()
	code, b := fixture.Get(t, url, key)
	return code, string(b)
}

// postKey POSTs a JSON body to url with the bearer key, reads the answer to the end and returns
// its status.
func postKey(t *testing.T, url, key, body string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func TestServeConsoleFlags(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	url, _, _ := startServe(t, model, "--threads", "1", "--max-model-len", "128", "--api-key", "k")
	if code, body := status(t, url+"/", ""); code != 200 || !strings.Contains(body, `content="serve"`) {
		t.Errorf("GET / with --api-key: %d (want 200, the page in serve mode)", code)
	}
	for _, p := range []string{"/console/api/cloud", "/console/api/requests"} {
		if code, _ := status(t, url+p, ""); code != 401 {
			t.Errorf("GET %s without the key: %d, want 401", p, code)
		}
		if code, body := status(t, url+p, "k"); code != 200 || !strings.HasPrefix(body, "{") {
			t.Errorf("GET %s with the key: %d %s", p, code, body)
		}
	}

	off, _, _ := startServe(t, model, "--threads", "1", "--max-model-len", "128", "--no-ui")
	if code, _ := status(t, off+"/", ""); code != 404 {
		t.Errorf("GET / with --no-ui: %d, want 404", code)
	}
	if code, _ := status(t, off+"/ui/app.js", ""); code != 404 {
		t.Errorf("GET /ui/app.js with --no-ui: %d, want 404", code)
	}
	if code, _ := status(t, off+"/console/api/cloud", ""); code != 200 {
		t.Errorf("GET /console/api/cloud with --no-ui: %d, want 200 (router and up read it)", code)
	}
}
