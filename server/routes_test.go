// routes_test.go checks over real HTTP the answers given before routing: 401 before 404 under
// /v1, the Bearer scheme in any case, --protect-all, and 405 with Allow.
package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/api"
)

func do(t *testing.T, method, url, auth string) (*http.Response, api.ErrorResponse) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.ErrorResponse
	json.Unmarshal(b, &e)
	return resp, e
}

func TestRoutesAuthBeforeRouting(t *testing.T) {
	for _, protectAll := range []bool{false, true} {
		ts := httptest.NewServer(New(Options{APIKey: "sekrit", ProtectAll: protectAll}).Handler())
		defer ts.Close()
		cases := []struct {
			method, path, auth string
			want               int
		}{
			{"POST", "/v1/completions", "", 401},
			{"GET", "/v1/no/such/thing", "", 401},  // unknown /v1 path: 401 before 404
			{"GET", "/v1", "", 401},                // the bare prefix too
			{"DELETE", "/v1/completions", "", 401}, // wrong method: 401 before 405
			{"GET", "/v1/no/such/thing", "Bearer nope", 401},
			{"GET", "/v1/no/such/thing", "Basic sekrit", 401},
			{"GET", "/v1/no/such/thing", "Bearer sekrit", 404},
			{"GET", "/v1/no/such/thing", "bearer sekrit", 404}, // scheme in any case
			{"GET", "/v1/no/such/thing", "BEARER  sekrit", 404},
			{"POST", "/v1/completions", "bEaReR sekrit", 503}, // past the key: the model is not loaded
			{"GET", "/health", "", 503},
			{"GET", "/version", "", 200},
			{"GET", "/nope", "", 404},
		}
		for _, p := range []string{"/tokenize", "/detokenize"} {
			want := 503
			if protectAll {
				want = 401
			}
			cases = append(cases, struct {
				method, path, auth string
				want               int
			}{"POST", p, "", want}, struct {
				method, path, auth string
				want               int
			}{"POST", p, "Bearer sekrit", 503})
		}
		metricsWant := 200
		if protectAll {
			metricsWant = 401
		}
		cases = append(cases, struct {
			method, path, auth string
			want               int
		}{"GET", "/metrics", "", metricsWant}, struct {
			method, path, auth string
			want               int
		}{"GET", "/metrics", "Bearer sekrit", 200})
		for _, c := range cases {
			resp, e := do(t, c.method, ts.URL+c.path, c.auth)
			if resp.StatusCode != c.want {
				t.Errorf("protectAll=%v %s %s (%q): %d, want %d", protectAll, c.method, c.path, c.auth, resp.StatusCode, c.want)
			}
			if c.want == 401 && (e.Error.Type != "authentication_error" || resp.Header.Get("WWW-Authenticate") == "") {
				t.Errorf("%s %s: 401 body %+v, WWW-Authenticate %q", c.method, c.path, e, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
}

func TestRoutesMethodNotAllowed(t *testing.T) {
	ts := httptest.NewServer(New(Options{}).Handler())
	defer ts.Close()
	cases := []struct{ method, path, allow string }{
		{"GET", "/v1/completions", "POST"},
		{"PUT", "/v1/chat/completions", "POST"},
		{"DELETE", "/v1/responses", "POST"},
		{"POST", "/v1/models", "GET, HEAD"},
		{"GET", "/tokenize", "POST"},
		{"POST", "/health", "GET, HEAD"},
		{"POST", "/metrics", "GET, HEAD"},
	}
	for _, c := range cases {
		resp, e := do(t, c.method, ts.URL+c.path, "")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
		if e.Error.Message == "" || e.Error.Type != "invalid_request_error" || e.Error.Code != "method_not_allowed" {
			t.Errorf("%s %s: body %+v is not an OpenAI error", c.method, c.path, e)
		}
	}
	if resp, _ := do(t, "GET", ts.URL+"/v1/nothing", ""); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d, want 404", resp.StatusCode)
	}
}
