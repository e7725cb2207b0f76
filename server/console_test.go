// console_test.go checks the console's endpoints over real HTTP on a real engine: the contract's
// JSON, a trace with plausible timings after a chat request, the page only with Options.UI, and
// the API key guarding /console/api/* but not the page.
package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func getJSON(t *testing.T, url, key string, v any) int {
	t.Helper()
	code, b := fixture.Get(t, url, key)
	if code == 200 && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v in %s", url, err, b)
		}
	}
	return code
}

func TestConsoleCloudAndTraces(t *testing.T) {
	ts := startServer(t, synthModel(t, t.TempDir(), 256), Options{ServedModelNames: []string{"tiny"}, UI: true}, nil)

	var raw map[string]any
	if code := getJSON(t, ts.url+console.CloudPath, "", &raw); code != 200 {
		t.Fatalf("cloud: %d", code)
	}
	for _, k := range []string{"mode", "time", "health_interval_s", "replicas", "autoscale"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("cloud JSON lacks %q: %v", k, raw)
		}
	}
	if a, ok := raw["autoscale"].([]any); !ok || len(a) != 0 {
		t.Errorf("autoscale = %v, want []", raw["autoscale"])
	}
	var empty console.Requests
	if getJSON(t, ts.url+console.RequestsPath, "", &empty); empty.Requests == nil || len(empty.Requests) != 0 {
		t.Fatalf("requests before any: %#v, want []", empty.Requests)
	}

	resp, err := http.Post(ts.url+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"tiny","messages":[{"role":"user","content":"hello there"}],"max_tokens":12,"temperature":0,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var chat struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&chat)
	resp.Body.Close()

	var reqs console.Requests
	if code := getJSON(t, ts.url+console.RequestsPath+"?limit=5", "", &reqs); code != 200 || len(reqs.Requests) != 1 {
		t.Fatalf("requests: %d, %+v", code, reqs)
	}
	tr := reqs.Requests[0]
	if tr.ID != chat.ID || tr.Model != "tiny" || tr.Replica != "" || tr.FinishReason != "length" || tr.Error != "" {
		t.Errorf("trace %+v (response id %q)", tr, chat.ID)
	}
	if tr.OutputTokens != 12 || tr.PromptTokens < 3 {
		t.Errorf("trace tokens %d prompt, %d output", tr.PromptTokens, tr.OutputTokens)
	}
	if tr.PrefillMs <= 0 || tr.DecodeMs <= 0 || tr.QueueMs < 0 || tr.QueueMs+tr.PrefillMs+tr.DecodeMs > tr.E2EMs+0.002 {
		t.Errorf("implausible timings: queue %v + prefill %v + decode %v vs e2e %v ms", tr.QueueMs, tr.PrefillMs, tr.DecodeMs, tr.E2EMs)
	}
	if tr.ArrivalUnix < float64(ts.srv.started) {
		t.Errorf("arrival %v before the server started (%d)", tr.ArrivalUnix, ts.srv.started)
	}

	var c console.Cloud
	getJSON(t, ts.url+console.CloudPath, "", &c)
	if c.Mode != "serve" || len(c.Replicas) != 1 {
		t.Fatalf("cloud %+v", c)
	}
	r := c.Replicas[0]
	if !r.Healthy || r.State != "ready" || r.Role != "both" || r.Model != "tiny" || r.URL != "" || r.Requests != 1 ||
		r.GenerationTokens != 12 || r.PromptTokens != int64(tr.PromptTokens) || r.Running != 0 {
		t.Errorf("replica %+v", r)
	}

	for _, q := range []string{"?limit=0", "?limit=abc"} {
		if code := getJSON(t, ts.url+console.RequestsPath+q, "", nil); code != 400 {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}
	page, err := http.Get(ts.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(b), `name="llmcloud-mode" content="serve"`) {
		t.Errorf("GET /: %d, mode meta missing", page.StatusCode)
	}
}

func TestConsoleNoUIAndAPIKey(t *testing.T) {
	off := startServer(t, synthModel(t, t.TempDir(), 64), Options{}, nil)
	if code := getJSON(t, off.url+"/", "", nil); code != 404 {
		t.Errorf("GET / without UI: %d, want 404", code)
	}
	if code := getJSON(t, off.url+console.CloudPath, "", nil); code != 200 {
		t.Errorf("console API without UI: %d, want 200 (the router scrapes it)", code)
	}

	ts := startServer(t, synthModel(t, t.TempDir(), 64), Options{APIKey: "k3y", UI: true}, nil)
	for _, c := range []struct {
		path, key string
		want      int
	}{
		{"/", "", 200}, {"/ui/app.js", "", 200}, {"/ui/nope.js", "", 404},
		{console.CloudPath, "", 401}, {console.RequestsPath, "", 401}, {"/console/api/nope", "", 401},
		{console.CloudPath, "k3y", 200}, {console.RequestsPath, "k3y", 200}, {"/v1/models", "", 401},
	} {
		if code := getJSON(t, ts.url+c.path, c.key, nil); code != c.want {
			t.Errorf("GET %s (key %q): %d, want %d", c.path, c.key, code, c.want)
		}
	}
}
