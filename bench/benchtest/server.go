// Package benchtest is a scripted OpenAI-compatible streaming server for testing the serving
// benchmark: every response follows a Script (time to first token, gap between tokens, token
// count, or a failure), and the server records when it received each request and wrote each
// chunk, so tests can compare the client's measurements with the truth.
package benchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Script is how the server answers one request.
type Script struct {
	TTFT    time.Duration // from receiving the request to the first content chunk
	ITL     time.Duration // between content chunks
	Tokens  int           // content chunks (one token each); 0: the request's max_tokens
	NoUsage bool          // omit the usage chunk even when include_usage is asked

	Status    int  // != 0 and != 200: answer with this status and a JSON error body
	Malformed bool // send a chunk that is not JSON after the first token
	CutAfter  int  // > 0: end the stream after this many tokens, without [DONE]
	Abort     bool // with CutAfter: drop the connection instead of ending the response
}

// Timing is the server's record of one request, keyed by its X-Request-Id.
type Timing struct {
	Received time.Time   // handler entered
	Writes   []time.Time // after each content chunk was flushed
}

// Server is a running scripted server.
type Server struct {
	*httptest.Server
	Model  string
	Script func(n int64, r *http.Request) Script // script for the n-th request received (from 0)
	// MaxModelLen, when > 0, is the max_model_len GET /v1/models reports (vLLM's field).
	MaxModelLen atomic.Int64

	count   atomic.Int64
	mu      sync.Mutex
	timings map[string]*Timing
	record  bool
}

// New starts a server on loopback answering every request with s. record keeps Timings (for
// requests that send X-Request-Id).
func New(s Script, record bool) *Server {
	return NewFunc(func(int64, *http.Request) Script { return s }, record)
}

// NewFunc starts a server whose n-th request r gets script(n, r).
func NewFunc(script func(n int64, r *http.Request) Script, record bool) *Server {
	srv := &Server{Model: "scripted", Script: script, timings: map[string]*Timing{}, record: record}
	srv.Server = httptest.NewServer(srv)
	return srv
}

// Handler returns the server's handler without starting a listener (for a real address);
// record keeps Timings, answered at TimingsPath.
func Handler(script func(n int64, r *http.Request) Script, record bool) *Server {
	return &Server{Model: "scripted", Script: script, timings: map[string]*Timing{}, record: record}
}

// Timing returns the recorded timing of request id.
func (s *Server) Timing(id string) (Timing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.timings[id]
	if !ok {
		return Timing{}, false
	}
	c := *t
	c.Writes = append([]time.Time(nil), t.Writes...)
	return c, true
}

// Requests is the number of requests received.
func (s *Server) Requests() int64 { return s.count.Load() }

type reqBody struct {
	Model         string `json:"model"`
	Prompt        string `json:"prompt"`
	Messages      []any  `json:"messages"`
	MaxTokens     int    `json:"max_tokens"`
	MaxCompletion int    `json:"max_completion_tokens"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	if r.Method == http.MethodGet && r.URL.Path == TimingsPath {
		s.serveTimings(w)
		return
	}
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		extra := ""
		if n := s.MaxModelLen.Load(); n > 0 {
			extra = fmt.Sprintf(`,"max_model_len":%d`, n)
		}
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"%s}]}`, s.Model, extra)
		return
	}
	chat := r.URL.Path == "/v1/chat/completions"
	if r.Method != http.MethodPost || (!chat && r.URL.Path != "/v1/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	n := s.count.Add(1) - 1
	sc := s.Script(n, r)
	var body reqBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	if sc.Status != 0 && sc.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(sc.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d"}}`, sc.Status)
		return
	}
	tokens := sc.Tokens
	if tokens == 0 {
		tokens = max(body.MaxTokens, body.MaxCompletion)
	}
	var tm *Timing
	if id := r.Header.Get("X-Request-Id"); s.record && id != "" {
		tm = &Timing{Received: received, Writes: make([]time.Time, 0, tokens)}
		s.mu.Lock()
		s.timings[id] = tm
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	ctx := r.Context()
	if chat { // a role-only first chunk, as servers send; it has no content
		fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
		fl.Flush()
	}
	for i := range tokens {
		due := received.Add(sc.TTFT + time.Duration(i)*sc.ITL)
		if d := time.Until(due); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if sc.CutAfter > 0 && i == sc.CutAfter {
			if sc.Abort {
				panic(http.ErrAbortHandler)
			}
			return
		}
		if sc.Malformed && i == 1 {
			fmt.Fprint(w, "data: {\"choices\": [oops\n\n")
			fl.Flush()
			return
		}
		finish := "null"
		if i == tokens-1 {
			finish = `"length"`
		}
		if chat {
			fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"},\"finish_reason\":%s}]}\n\n", i, finish)
		} else {
			fmt.Fprintf(w, "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" t%d\",\"finish_reason\":%s}]}\n\n", i, finish)
		}
		fl.Flush()
		if tm != nil {
			now := time.Now()
			s.mu.Lock()
			tm.Writes = append(tm.Writes, now)
			s.mu.Unlock()
		}
	}
	if body.StreamOptions.IncludeUsage && !sc.NoUsage {
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", 0, tokens, tokens)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}
