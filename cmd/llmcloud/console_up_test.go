// console_up_test.go checks up's console endpoints on a real fleet: the supervisor's replicas
// with their own counters, requests under the replicas' names, the autoscaler's history, and
// --api-key on the router and the replicas with the page left open.
package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestUpConsole(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	url, _ := startUp(t, "--replicas", "2", "--model", model, "--policy", "round-robin", "--api-key", "k",
		"--autoscale", "2:2", "--autoscale-interval", "100ms", "--health-interval", "200ms",
		"--", "--max-model-len", "128", "--threads", "1", "--disable-log-requests")
	waitFleet(t, url, "2 ready replicas", 60*time.Second, func(v fleetView) bool { return readyCount(v) == 2 })

	for range 4 {
		if code, _ := status(t, url+"/v1/models", ""); code != 401 {
			t.Fatalf("GET /v1/models on up without the key: %d, want 401", code)
		}
		if code := postKey(t, url+"/v1/completions", "k", `{"prompt":"Once","max_tokens":4,"ignore_eos":true}`); code != 200 {
			t.Fatalf("completion: %d", code)
		}
	}
	if code, body := status(t, url+"/", ""); code != 200 || !strings.Contains(body, `content="up"`) {
		t.Errorf("GET / on up: %d, want the page in up mode", code)
	}
	for _, p := range []string{console.CloudPath, console.RequestsPath} {
		if code, _ := status(t, url+p, ""); code != 401 {
			t.Errorf("GET %s without the key: %d, want 401", p, code)
		}
	}

	var c console.Cloud
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, body := status(t, url+console.CloudPath, "k")
		if code != 200 || json.Unmarshal([]byte(body), &c) != nil {
			t.Fatalf("cloud: %d %s", code, body)
		}
		var gen int64 // a replica whose scrape missed the health timeout (a loaded machine) shows 0
		for _, r := range c.Replicas {
			gen += r.GenerationTokens
		}
		if (len(c.Autoscale) > 0 && gen == 16) || time.Now().After(deadline) {
			break
		}
	}
	if c.Mode != "up" || c.HealthInterval != 0.2 || len(c.Replicas) != 2 {
		t.Fatalf("cloud %+v", c)
	}
	var gen int64
	names := map[string]bool{}
	for _, r := range c.Replicas {
		if !strings.HasPrefix(r.Name, "r") || r.State != "ready" || !r.Healthy || r.Model != "stories260K" || r.URL == "" {
			t.Errorf("replica %+v", r)
		}
		names[r.Name] = true
		gen += r.GenerationTokens
	}
	if gen != 16 {
		t.Errorf("generation tokens over the fleet %d, want 16 (the replicas' own counters, read with the key)", gen)
	}
	if len(c.Autoscale) == 0 || c.Autoscale[len(c.Autoscale)-1].Action != "hold" || c.Autoscale[0].Before != 2 {
		t.Errorf("autoscale history %+v: want the holds of a 2:2 fleet", c.Autoscale)
	}

	rs := requestsUntil(t, url+console.RequestsPath, "k", 4)
	per := map[string]int{}
	for _, tr := range rs.Requests {
		if !names[tr.Replica] || tr.OutputTokens != 4 {
			t.Errorf("trace %+v", tr)
		}
		per[tr.Replica]++
	}
	if len(per) != 2 {
		t.Errorf("requests by replica %v, want both (round-robin)", per)
	}
}
