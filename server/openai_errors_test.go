// The OpenAI-compatibility suite's error paths: the official Go client (openai-go) against
// the real server for malformed and refused requests (each an OpenAI error object with its
// status and param), a full queue's 429, and a client that disconnects mid-stream (its request
// aborted, its blocks freed, the abort counted).
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// apiErr asserts err is an OpenAI error with the status, and the param when given.
func apiErr(t *testing.T, err error, status int, param string) *openai.Error {
	t.Helper()
	var e *openai.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an API error %d, got %v", status, err)
	}
	if e.StatusCode != status || (param != "" && e.Param != param) || e.Message == "" || e.Type == "" {
		t.Fatalf("want %d (param %q), got %d: %+v", status, param, e.StatusCode, e)
	}
	return e
}

func TestErrors(t *testing.T) {
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}, APIKey: "sekrit", MaxBodyBytes: 4096}, nil)
	ctx := context.Background()
	noKey := client(ts)
	_, err := noKey.Completions.New(ctx, cmplParams(prompt, 4))
	apiErr(t, err, 401, "")
	c := client(ts, option.WithAPIKey("sekrit"))
	if _, err := c.Completions.New(ctx, cmplParams(prompt, 4)); err != nil {
		t.Fatal(err)
	}
	p := cmplParams(prompt, 4)
	p.Model = "gpt-9"
	_, err = c.Completions.New(ctx, p)
	apiErr(t, err, 404, "model")
	for field, v := range map[string]any{"temperature": -1, "top_p": 2, "top_k": -5, "min_p": 3, "presence_penalty": 9,
		"frequency_penalty": -9, "repetition_penalty": 0, "n": 0, "logprobs": 50, "max_tokens": 0, "stop": 5,
		"logit_bias": map[string]int{"x": 1}, "stop_token_ids": []int{-1}, "seed": "abc"} {
		_, err := c.Completions.New(ctx, cmplParams(prompt, 4), option.WithJSONSet(field, v))
		e := apiErr(t, err, 400, field)
		if !strings.Contains(e.Message, field) {
			t.Errorf("%s: message %q does not name the field", field, e.Message)
		}
	}
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "stories", Messages: nil})
	apiErr(t, err, 400, "messages")
	// A prompt over max-model-len (512) says by how many tokens.
	long := strings.Repeat(" x", 600)
	_, err = c.Completions.New(ctx, cmplParams(long, 4))
	e := apiErr(t, err, 400, "prompt")
	if !strings.Contains(e.Message, "tokens over") {
		t.Fatalf("too long: %q", e.Message)
	}
	_, err = c.Completions.New(ctx, cmplParams(strings.Repeat("y", 5000), 4))
	apiErr(t, err, 413, "")

	// 503 before the model is attached.
	s := New(Options{})
	rec := &recorder{h: http.Header{}}
	s.Handler().ServeHTTP(rec, mustReq("POST", "/v1/completions", `{"prompt":"x"}`))
	if rec.code != 503 {
		t.Fatalf("not ready: %d", rec.code)
	}
	s.Handler().ServeHTTP(rec, mustReq("GET", "/health", ``))
	if rec.code != 503 {
		t.Fatalf("health not ready: %d", rec.code)
	}
}

func TestQueueFull429(t *testing.T) {
	ts := startServer(t, storiesPath(t), Options{ServedModelNames: []string{"stories"}}, func(o *engine.Options) {
		o.Scheduler.MaxNumSeqs = 1
		o.MaxQueuedRequests = 1
	})
	c := client(ts)
	ctx := context.Background()
	p := cmplParams(prompt, 400)
	p.Temperature = openai.Float(1)
	errs := make(chan error, 6)
	for range 6 {
		go func() {
			_, err := c.Completions.New(ctx, p, option.WithJSONSet("ignore_eos", true))
			errs <- err
		}()
	}
	n429 := 0
	for range 6 {
		if err := <-errs; err != nil {
			var e *openai.Error
			if errors.As(err, &e) && e.StatusCode == 429 {
				n429++
				if e.Response.Header.Get("Retry-After") == "" {
					t.Error("429 without Retry-After")
				}
				continue
			}
			t.Fatal(err)
		}
	}
	if n429 == 0 {
		t.Fatal("no 429 with one running and one queued slot")
	}
}

// A client that goes away aborts its request: the KV blocks are free right after.
func TestDisconnectAborts(t *testing.T) {
	ts := storiesServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	p := cmplParams(prompt, 400)
	c := client(ts)
	st := c.Completions.NewStreaming(ctx, p, option.WithJSONSet("ignore_eos", true))
	if !st.Next() {
		t.Fatal(st.Err())
	}
	// Stats is a snapshot the step loop publishes after each step, so the first chunk can
	// reach the client before the snapshot that counts its request as running.
	for wait := time.Now().Add(2 * time.Second); ts.eng.Stats().Running != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("stats %+v", ts.eng.Stats())
		}
	}
	cancel()
	st.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		s := ts.eng.Stats()
		if s.Running+s.Waiting == 0 && s.KVUsage == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("request still running after the client left: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// the handler counts the abort when it sees the request's last output, which may be a
	// moment after the engine let it go
	series := `vllm:request_success_total{finished_reason="abort",model_name="stories"}`
	m := scrape(t, ts.url)
	for ; !strings.Contains(m, series+" ") && time.Now().Before(deadline); m = scrape(t, ts.url) {
		time.Sleep(5 * time.Millisecond)
	}
	if v := metricValue(t, m, series); v != 1 {
		t.Fatalf("abort count %v", v)
	}
}

type recorder struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.h }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(c int)           { r.code = c }

func mustReq(method, path, body string) *http.Request {
	r, err := http.NewRequest(method, path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	return r
}

var _ = json.Marshal
