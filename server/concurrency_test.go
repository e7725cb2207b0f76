// Load: 200 concurrent streaming clients on a small model. Each one completes (its last
// chunk carries a finish reason, then [DONE]) or gets a 429; none hangs; the KV cache is
// empty afterwards.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/engine"
)

func TestConcurrentStreams(t *testing.T) {
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}}, func(o *engine.Options) {
		o.Scheduler.MaxNumSeqs = 64
		o.MaxQueuedRequests = 100 // some of the 200 get a 429
	})
	const clients = 200
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]int{}
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := streamOnce(ctx, ts.url, i)
			mu.Lock()
			results[res]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("%d clients in %v: %v", clients, time.Since(start), results)
	if results["ok"]+results["429"] != clients {
		t.Fatalf("outcomes %v", results)
	}
	if results["ok"] == 0 {
		t.Fatal("no client completed")
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		m := scrape(t, ts.url)
		kv := metricValue(t, m, `vllm:kv_cache_usage_perc{model_name="stories"}`)
		run := metricValue(t, m, `vllm:num_requests_running{model_name="stories"}`)
		if kv == 0 && run == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kv_cache_usage_perc %v, running %v after the load", kv, run)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamOnce runs one streamed completion and says how it ended: "ok", "429", or a problem.
func streamOnce(ctx context.Context, url string, i int) string {
	body, _ := json.Marshal(map[string]any{"model": "stories", "prompt": fmt.Sprintf("Once upon a time %d", i%7),
		"max_tokens": 24 + i%40, "temperature": 1, "seed": i, "stream": true, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true}})
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "transport: " + err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode == 429 {
		return "429"
	}
	if resp.StatusCode != 200 {
		return fmt.Sprintf("status %d", resp.StatusCode)
	}
	r := api.NewSSEReader(resp.Body)
	finished, usage := false, false
	for {
		data, err := r.Next()
		if err == api.ErrDone {
			break
		}
		if err != nil {
			return "stream: " + err.Error()
		}
		var c api.CompletionResponse
		if err := json.Unmarshal(data, &c); err != nil {
			return "json: " + err.Error()
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				finished = *ch.FinishReason == "length"
			}
		}
		if c.Usage != nil && c.Usage.CompletionTokens == 24+i%40 {
			usage = true
		}
	}
	if !finished || !usage {
		return fmt.Sprintf("final chunk lost (finish %v, usage %v)", finished, usage)
	}
	return "ok"
}
