// Package routertest is a fast OpenAI-compatible replica for testing and measuring the router:
// POST /v1/completions and /v1/chat/completions answer with Tokens chunks (streamed as SSE, one
// flush per token, ITL apart, or as one JSON body), GET /health, GET /v1/models, and GET /metrics
// with vLLM's load gauges (the requests it is serving as vllm:num_requests_running); /v1/models
// lists "test" or what SetModels says. It does
// no model work, so the router's own cost shows. Request headers steer single requests:
// X-Test-Status answers with that status and an OpenAI error body, X-Test-Tokens, X-Test-TTFT
// and X-Test-ITL override the token count, the first token's delay and the gap. Every answer carries X-Backend (the name) and
// echoes X-Request-Id. SetHealthDelay slows GET /health; Freeze makes every request, and every
// stream between two chunks, wait until Thaw (a SIGSTOPped process, as seen from the network).
package routertest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Backend is one replica's handler.
type Backend struct {
	Name   string
	Tokens int           // chunks per answer (default 1)
	TTFT   time.Duration // before the first chunk (nothing is written before it)
	ITL    time.Duration // gap between chunks

	healthy  atomic.Bool
	running  atomic.Int64
	requests atomic.Int64
	canceled atomic.Int64
	hdelay   atomic.Int64                  // GET /health waits this long (ns)
	frozen   atomic.Pointer[chan struct{}] // non-nil while frozen; closed by Thaw
	models   atomic.Pointer[[]string]      // GET /v1/models lists these (nil: "test"; empty: 404)
}

// SetModels makes GET /v1/models list ids, the first as the base model and the rest as its
// adapters (parent = the first), as llmcloud serve --enable-lora does; with no ids it answers
// 404 (a replica that lists no models). Before any call it lists "test".
func (b *Backend) SetModels(ids ...string) { b.models.Store(&ids) }

// SetHealthDelay makes GET /health wait d before answering.
func (b *Backend) SetHealthDelay(d time.Duration) { b.hdelay.Store(int64(d)) }

// Freeze stops every answer where it is (new requests, streams between chunks) until Thaw.
func (b *Backend) Freeze() {
	ch := make(chan struct{})
	b.frozen.CompareAndSwap(nil, &ch)
}

// Thaw lets frozen answers go on.
func (b *Backend) Thaw() {
	if ch := b.frozen.Swap(nil); ch != nil {
		close(*ch)
	}
}

// wait blocks while the backend is frozen; false if the request was canceled meanwhile.
func (b *Backend) wait(r *http.Request) bool {
	ch := b.frozen.Load()
	if ch == nil {
		return true
	}
	select {
	case <-*ch:
		return true
	case <-r.Context().Done():
		return false
	}
}

// New returns a healthy backend called name.
func New(name string, tokens int, itl time.Duration) *Backend {
	b := &Backend{Name: name, Tokens: max(tokens, 1), ITL: itl}
	b.healthy.Store(true)
	return b
}

// SetHealthy makes GET /health answer 200 (true) or 503.
func (b *Backend) SetHealthy(ok bool) { b.healthy.Store(ok) }

// Requests is the number of completion requests received.
func (b *Backend) Requests() int64 { return b.requests.Load() }

// Running is the number of completion requests being answered now.
func (b *Backend) Running() int64 { return b.running.Load() }

// Canceled is the number of streams that ended because the client went away.
func (b *Backend) Canceled() int64 { return b.canceled.Load() }

type body struct {
	Stream    bool `json:"stream"`
	MaxTokens int  `json:"max_tokens"`
}

var (
	chunk    = []byte("data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" tok\",\"finish_reason\":null}]}\n\n")
	chatRole = []byte("data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
	chatTok  = []byte("data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"},\"finish_reason\":null}]}\n\n")
	done     = []byte("data: [DONE]\n\n")
)

func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !b.wait(r) {
		return
	}
	h := w.Header()
	h.Set("X-Backend", b.Name)
	if id := r.Header.Get("X-Request-Id"); id != "" {
		h.Set("X-Request-Id", id)
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/health":
		if d := time.Duration(b.hdelay.Load()); d > 0 && !sleep(r, d) {
			return
		}
		if !b.healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	case r.Method == http.MethodGet && r.URL.Path == "/metrics":
		h.Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"test\"} " +
			strconv.FormatInt(b.running.Load(), 10) + "\nvllm:num_requests_waiting{model_name=\"test\"} 0\n" +
			"vllm:kv_cache_usage_perc{model_name=\"test\"} 0\n"))
		return
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		h.Set("Content-Type", "application/json")
		ids := b.models.Load()
		if ids == nil {
			w.Write([]byte(`{"object":"list","data":[{"id":"test","object":"model"}]}`))
			return
		}
		if len(*ids) == 0 {
			writeError(w, http.StatusNotFound, "no route GET /v1/models")
			return
		}
		var data []map[string]string
		for i, id := range *ids {
			m := map[string]string{"id": id, "object": "model", "owned_by": "routertest"}
			if i > 0 {
				m["parent"] = (*ids)[0]
			}
			data = append(data, m)
		}
		out, _ := json.Marshal(map[string]any{"object": "list", "data": data})
		w.Write(out)
		return
	}
	chat := r.URL.Path == "/v1/chat/completions"
	if r.Method != http.MethodPost || (!chat && r.URL.Path != "/v1/completions") {
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
		return
	}
	b.requests.Add(1)
	b.running.Add(1)
	defer b.running.Add(-1)
	var req body
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	if s := r.Header.Get("X-Test-Status"); s != "" {
		code, _ := strconv.Atoi(s)
		writeError(w, code, "scripted status "+s)
		return
	}
	tokens, ttft, itl := b.Tokens, b.TTFT, b.ITL
	if s := r.Header.Get("X-Test-Tokens"); s != "" {
		tokens, _ = strconv.Atoi(s)
	}
	if s := r.Header.Get("X-Test-TTFT"); s != "" {
		ttft, _ = time.ParseDuration(s)
	}
	if s := r.Header.Get("X-Test-ITL"); s != "" {
		itl, _ = time.ParseDuration(s)
	}
	if ttft > 0 && !sleep(r, ttft) {
		b.canceled.Add(1)
		return
	}
	if !req.Stream {
		h.Set("Content-Type", "application/json")
		out, _ := json.Marshal(map[string]any{"object": "text_completion", "model": "test",
			"choices": []map[string]any{{"index": 0, "text": strings.Repeat(" tok", tokens), "finish_reason": "length"}}})
		w.Write(out)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	tok := chunk
	if chat {
		tok = chatTok
		w.Write(chatRole)
	}
	for i := range tokens {
		if i > 0 && itl > 0 && !sleep(r, itl) || !b.wait(r) {
			b.canceled.Add(1)
			return
		}
		if _, err := w.Write(tok); err != nil {
			b.canceled.Add(1)
			return
		}
		fl.Flush()
	}
	w.Write(done)
}

// sleep waits d unless the request is canceled first (then it returns false).
func sleep(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	out, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": strconv.Itoa(status)}})
	w.Write(out)
}
