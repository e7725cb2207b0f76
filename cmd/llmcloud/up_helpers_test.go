// Helpers of the up tests: the test binary as the replicas' llmcloud, up run in-process, and
// polling of its status endpoints.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
)

// startUp runs `llmcloud up ARGS` in-process with this test binary as the replicas' binary and
// returns the router's URL and the log. The cloud is stopped (and checked to stop cleanly) at
// the end of the test.
func startUp(t *testing.T, args ...string) (string, *proc.Buffer) {
	t.Helper()
	t.Setenv(asMainEnv, "1") // the replicas are this test binary as llmcloud (TestMain)
	logs := &proc.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	args = append([]string{"--host", "127.0.0.1", "--port", "0", "--status-interval", "500ms"}, args...)
	go func() {
		done <- up(ctx, args, logs, logs, upHooks{
			serveArgv: []string{os.Args[0], "serve"},
			ready:     func(a string) { addrc <- a },
		})
	}()
	var url string
	select {
	case a := <-addrc:
		url = "http://" + a
	case err := <-done:
		t.Fatalf("up: %v\n%s", err, logs)
	}
	t.Cleanup(func() {
		var before fleetView
		if resp, err := http.Get(url + "/cloud/status"); err == nil {
			json.NewDecoder(resp.Body).Decode(&before)
			resp.Body.Close()
		}
		cancel() // as Ctrl-C
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("up returned %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("up did not stop")
		}
		for _, r := range before.Replicas {
			if r.PID != 0 && syscall.Kill(r.PID, 0) == nil {
				t.Errorf("replica %s (pid %d) still running after up returned", r.Name, r.PID)
			}
		}
		if t.Failed() {
			t.Logf("up's log:\n%s", logs)
		}
	})
	return url, logs
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// waitFleet polls /cloud/status until cond holds.
func waitFleet(t *testing.T, url, what string, timeout time.Duration, cond func(fleetView) bool) fleetView {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var v fleetView
		getJSON(t, url+"/cloud/status", &v)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; status %+v", what, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readyCount(v fleetView) int {
	n := 0
	for _, r := range v.Replicas {
		if r.State == "ready" && r.Healthy {
			n++
		}
	}
	return n
}

// routerURLs returns the backends of GET /router/status.
func routerURLs(t *testing.T, url string) []string {
	var st struct {
		Backends []struct {
			URL string `json:"url"`
		} `json:"backends"`
	}
	getJSON(t, url+"/router/status", &st)
	var urls []string
	for _, b := range st.Backends {
		urls = append(urls, b.URL)
	}
	return urls
}

func grepLines(s, sub string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			fmt.Fprintln(&b, l)
		}
	}
	return b.String()
}
