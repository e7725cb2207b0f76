// Disconnect scenario: 100 streaming completions to one `serve`, the clients hanging up at
// random points (before the first byte, after a few events, or reading to the end); afterwards
// /metrics must show no running or waiting request and no KV block in use, and the server must
// still answer.
package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestChaosDisconnects(t *testing.T) {
	need(t)
	srv := start(t, "serve", "serve", stories(t), "--host", "127.0.0.1", "--port", "0")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	rng := rand.New(rand.NewPCG(17, 17))
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		wg     sync.WaitGroup
		sem    = make(chan struct{}, 16)
	)
	for i := range 100 {
		mode, events, delay := rng.IntN(3), rng.IntN(60), time.Duration(rng.IntN(30))*time.Millisecond
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			kind := disconnectOne(client, srv.url(), i, mode, events, delay)
			mu.Lock()
			counts[kind]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("100 streams: %v", counts)

	var m map[string]float64
	t0 := time.Now()
	for {
		m = scrapeMetrics(t, srv.url())
		if m["vllm:num_requests_running"] == 0 && m["vllm:num_requests_waiting"] == 0 && m["vllm:kv_cache_usage_perc"] == 0 {
			break
		}
		if time.Since(t0) > 10*time.Second {
			t.Errorf("10s after the last client left: running %v, waiting %v, KV usage %v",
				m["vllm:num_requests_running"], m["vllm:num_requests_waiting"], m["vllm:kv_cache_usage_perc"])
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	settled := time.Since(t0)
	t.Logf("after the disconnects: %v requests aborted by the server; running %v, waiting %v, KV usage %v (settled in %v)",
		m["aborted"], m["vllm:num_requests_running"], m["vllm:num_requests_waiting"], m["vllm:kv_cache_usage_perc"], settled.Round(time.Millisecond))
	if m["aborted"] < 10 {
		t.Errorf("only %v requests were aborted while running: the scenario did not cut live requests", m["aborted"])
	}
	o := complete(&http.Client{Timeout: 15 * time.Second}, srv.url(), false)
	if !o.ok {
		t.Errorf("server does not answer after the disconnects: %s", o.why)
	}
	summary(t, "disconnects: 100 streams (%d cut before the answer, %d cut mid-stream, %d read to the end, %d other; %v aborted by the server); after: running %v, KV usage %v within %v; server answers: %v",
		counts["cut early"], counts["cut mid-stream"], counts["complete"], counts["other"], m["aborted"],
		m["vllm:num_requests_running"], m["vllm:kv_cache_usage_perc"], settled.Round(time.Millisecond), o.ok)
}

// disconnectOne sends streaming request i and hangs up as mode says: 0 after delay, before
// reading the answer; 1 after reading events events; 2 never (reads to [DONE]).
func disconnectOne(client *http.Client, base string, i, mode, events int, delay time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"prompt":"Once upon a time there was %d","max_tokens":200,"stream":true}`, i)
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if mode == 0 {
		time.AfterFunc(delay, cancel)
	}
	resp, err := client.Do(req)
	if err != nil {
		if mode == 0 {
			return "cut early"
		}
		return "other"
	}
	defer resp.Body.Close()
	if mode == 0 {
		cancel()
		return "cut early"
	}
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "data: ") {
			continue
		}
		if sc.Text() == "data: [DONE]" {
			return "complete"
		}
		if n++; mode == 1 && n >= events {
			cancel() // hang up mid-stream
			return "cut mid-stream"
		}
	}
	return "other"
}

var abortRE = regexp.MustCompile(`(?m)^vllm:request_success_total\{[^}]*finished_reason="abort"[^}]*\} (\S+)$`)

var metricRE = regexp.MustCompile(`(?m)^(vllm:[a-z_]+)\{[^}]*\} (\S+)$`)

// scrapeMetrics reads GET /metrics into name → value (the last sample of each name).
func scrapeMetrics(t *testing.T, base string) map[string]float64 {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	if m := abortRE.FindStringSubmatch(string(raw)); m != nil {
		out["aborted"], _ = strconv.ParseFloat(m[1], 64)
	}
	for _, m := range metricRE.FindAllStringSubmatch(string(raw), -1) {
		if v, err := strconv.ParseFloat(m[2], 64); err == nil {
			out[m[1]] = v
		}
	}
	for _, k := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"} {
		if _, ok := out[k]; !ok {
			t.Fatalf("/metrics has no %s:\n%s", k, tail(string(raw)))
		}
	}
	return out
}
