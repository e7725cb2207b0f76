// Package server is llmcloud's OpenAI-compatible HTTP server, vLLM-flavoured: the completions
// and chat completions endpoints (streamed as Server-Sent Events or not), /v1/models,
// /tokenize, /detokenize, /health, /version and /metrics with vLLM's metric names.
//
// A Server is created before its model is loaded (so /health can say 503 while loading) and
// becomes ready with Attach. Every generation goes through one engine.Engine; a request's
// context is the engine request's context, so a client that disconnects aborts its request.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/lora"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configures a Server. Zero values take the defaults noted.
type Options struct {
	// Grammar bounds structured-output compilation (sizes, time, cache).
	Grammar GrammarOptions

	// ServedModelNames are the names clients may use; the first is reported in responses and
	// metrics. Empty: the model's name.
	ServedModelNames []string
	APIKey           string // when set, /v1 and /v1/* require "Authorization: Bearer <key>"
	ProtectAll       bool   // with APIKey, /tokenize, /detokenize and /metrics require it too
	ChatTemplate     string // Jinja source overriding the model's
	// UseModelDefaults gives the sampling fields a request leaves out the model's defaults
	// (generation_config.json, GGUF general.sampling.*) and, where the model has none,
	// temperature 0.8 and top-p 0.95 (loader.Defaults.Params). Without it they get OpenAI's
	// and vLLM's temperature 1, top-p 1.
	UseModelDefaults bool
	MaxBodyBytes     int64 // request bodies larger get 413 (default 8 MiB)
	MaxN             int   // largest n (default 16)
	LogRequests      bool  // one slog line per finished request
	Logger           *slog.Logger
	// Registerer receives the server's metrics (nil: a new registry, see Server.Gatherer).
	Registry *prometheus.Registry
	Version  string
	// RetryAfter is the Retry-After of a 429 (default 1 s).
	RetryAfter time.Duration
	// Seed, when set, seeds the generator of the seeds given to requests without one.
	Seed *uint64
	// ToolCallParser reads tool calls in replies (toolcall.Names: hermes, llama3_json,
	// mistral); EnableAutoToolChoice allows tool_choice "auto" (tools.go).
	ToolCallParser       string
	EnableAutoToolChoice bool
	// ReasoningParser splits <think> reasoning off replies (reasoning.Names: qwen3, deepseek_r1).
	ReasoningParser string
	// ProfilerDir enables POST /start_profile and /stop_profile, which write traces here
	// (profile.go); empty: the endpoints answer 404.
	ProfilerDir string
	// LoRA, when set, serves run-time LoRA adapters (vLLM's --enable-lora): a request whose
	// model is an adapter's name runs with it, /v1/models lists them, and POST
	// /v1/load_lora_adapter and /v1/unload_lora_adapter change them (lora.go). The engine must
	// be made with engine.Options.LoRA set to the same registry.
	LoRA *lora.Registry
	// KVRole is the replica's part in disaggregated prefill/decode (producer, consumer or
	// both; "" = none), listed as kv_role on /v1/models for the router's pd policy.
	KVRole string
	// KVImport, when set, is asked for the KV rows of a prompt computed elsewhere before the
	// prompt is added to the engine (engine.Request.ImportKV; nil rows: compute it here). It
	// reads what it needs (the producer's address) from ctx, the request's context.
	KVImport func(ctx context.Context, prompt []int, cacheSalt string, adapter uint32) [][]byte
	// KVHold, when set, reports from a request's context whether its prompt's KV is to be kept
	// for an export when it finishes (engine.Request.HoldKV: a producer's prefill request).
	KVHold func(ctx context.Context) bool
	// UI serves the web console (package ui) at GET / and /ui/; its JSON endpoints under
	// /console/api/ are served either way (console.go).
	UI bool
}

// Server is the HTTP front of one model.
type Server struct {
	opts    Options
	log     *slog.Logger
	reg     *prometheus.Registry
	metrics *metrics
	mux     *http.ServeMux
	handler http.Handler          // mux behind the API key check and the access log
	allow   map[string][]string   // methods of each registered path (405 answers)
	state   atomic.Pointer[state] // nil until Attach
	closing atomic.Bool
	nextID  atomic.Uint64
	started int64
	seedMu  sync.Mutex
	seeds   *rand.Rand
	items   itemStore    // the Responses API's output items, for item_reference
	prof    *profiler    // nil without Options.ProfilerDir
	traces  console.Ring // the last finished requests (console.go)
}

// state is what Attach provides.
type state struct {
	b           *loader.Bundle
	eng         *engine.Engine
	name        string
	names       []string
	tmpl        string
	maxModelLen int
	grammars    *grammarCache  // structured output: compiled grammars and the Vocab
	lora        *lora.Registry // run-time LoRA adapters (nil: not enabled; lora.go)
}

// New returns a server that answers 503 on every model endpoint until Attach.
func New(opts Options) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 8 << 20
	}
	if opts.MaxN <= 0 {
		opts.MaxN = 16
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	s := &Server{opts: opts, log: opts.Logger, reg: opts.Registry, started: time.Now().Unix()}
	seed := rand.Uint64()
	if opts.Seed != nil {
		seed = *opts.Seed
	}
	s.seeds = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	s.metrics = newMetrics(s.reg, s.stats, s.modelName())
	s.mux = http.NewServeMux()
	s.route("POST", "/v1/completions", s.needModel(s.handleCompletions))
	s.route("POST", "/v1/chat/completions", s.needModel(s.handleChat))
	s.route("POST", "/v1/responses", s.needModel(s.handleResponses))
	s.route("GET", "/v1/models", s.needModel(s.handleModels))
	s.route("POST", "/tokenize", s.needModel(s.handleTokenize))
	s.route("POST", "/detokenize", s.needModel(s.handleDetokenize))
	s.route("GET", "/health", http.HandlerFunc(s.handleHealth))
	s.route("GET", "/version", http.HandlerFunc(s.handleVersion))
	s.route("GET", "/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	s.routeProfiler()
	s.routeLoRA()
	s.routeConsole()
	s.mux.HandleFunc("/", s.notFound)
	s.handler = s.accessLog(s.requireKey(s.mux))
	return s
}

// modelName is the label of the metrics: the first served name, fixed at New.
func (s *Server) modelName() string {
	if len(s.opts.ServedModelNames) > 0 {
		return s.opts.ServedModelNames[0]
	}
	return ""
}

// StepHook is the engine's OnStep callback that feeds vllm:iteration_tokens_total; pass it
// in engine.Options before Attach.
func (s *Server) StepHook(m engine.StepMetrics) { s.metrics.observeStep(m) }

// Attach makes the server ready to serve b through eng.
func (s *Server) Attach(b *loader.Bundle, eng *engine.Engine) {
	st := &state{b: b, eng: eng, names: s.opts.ServedModelNames, tmpl: b.ChatTemplate,
		maxModelLen: eng.Config().MaxModelLenTokens,
		grammars:    newGrammarCache(b.Tok, b.Model.Config.Vocab, s.opts.Grammar), lora: s.opts.LoRA}
	if len(st.names) == 0 {
		st.names = []string{b.Name}
	}
	st.name = st.names[0]
	if s.opts.ChatTemplate != "" {
		st.tmpl = s.opts.ChatTemplate
	}
	s.metrics.setModel(st.name)
	s.state.Store(st)
}

// randomSeed is the seed of a request that gives none.
func (s *Server) randomSeed() uint64 {
	s.seedMu.Lock()
	defer s.seedMu.Unlock()
	return s.seeds.Uint64()
}

// BeginShutdown makes /health answer 503 (load balancers stop sending) while running
// requests finish.
func (s *Server) BeginShutdown() { s.closing.Store(true) }

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Registry is the registry holding the server's metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

func (s *Server) stats() (engine.Stats, bool) {
	st := s.state.Load()
	if st == nil {
		return engine.Stats{}, false
	}
	return st.eng.Stats(), true
}

// needModel wraps a model endpoint: readiness, body limit (the API key is checked before
// routing, routes.go).
func (s *Server) needModel(h func(http.ResponseWriter, *http.Request, *state)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := s.state.Load()
		if st == nil {
			writeError(w, http.StatusServiceUnavailable, "model_not_ready", "", "the model is still loading")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		h(w, r, st)
	}
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.state.Load() == nil || s.closing.Load() {
		writeError(w, http.StatusServiceUnavailable, "model_not_ready", "", "not ready")
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.VersionResponse{Version: s.opts.Version})
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request, st *state) {
	list := api.ModelList{Object: "list"}
	for _, n := range st.names {
		list.Data = append(list.Data, api.Model{ID: n, Object: "model", Created: s.started,
			OwnedBy: "llmcloud", Root: st.b.Name, MaxModelLen: st.maxModelLen, KVRole: s.opts.KVRole})
	}
	list.Data = append(list.Data, s.adapterModels(st)...)
	writeJSON(w, http.StatusOK, list)
}

// checkModel returns the response's model name for the requested one ("" = the default).
func (st *state) checkModel(name string) (string, *apiError) {
	if name == "" {
		return st.name, nil
	}
	for _, n := range st.names {
		if n == name {
			return n, nil
		}
	}
	if st.adapterOf(name) != 0 {
		return name, nil
	}
	return "", &apiError{status: http.StatusNotFound, code: "model_not_found", param: "model",
		msg: fmt.Sprintf("the model %q does not exist (served: %s)", name, strings.Join(st.servedNames(), ", "))}
}

// apiError is an error with its HTTP status and OpenAI fields.
type apiError struct {
	status     int
	code       string
	param      string
	msg        string
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.msg }

func badRequest(param, format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "invalid_value", param: param, msg: fmt.Sprintf(format, a...)}
}

func (s *Server) fail(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(int(e.retryAfter.Seconds()+0.999)))
	}
	writeError(w, e.status, e.code, e.param, e.msg)
}

func errorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "invalid_request_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable:
		return "service_unavailable_error"
	}
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request_error"
}

func writeError(w http.ResponseWriter, status int, code, param, msg string) {
	noteReason(w, msg)
	typ := errorType(status)
	if code == "model_not_found" {
		typ = "invalid_request_error" // as OpenAI answers an unknown model (404)
	}
	body := api.ErrorResponse{Error: api.ErrorBody{Message: msg, Type: typ, Code: code}}
	if param != "" {
		body.Error.Param = &param
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// decodeBody reads the JSON body into v, mapping failures to 400/413 naming the field.
func decodeBody(r *http.Request, v any) *apiError {
	b, e := readBody(r)
	if e != nil {
		return e
	}
	return unmarshalBody(b, v)
}

// readBody reads the whole body (413 when over the limit).
func readBody(r *http.Request) ([]byte, *apiError) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, code: "request_too_large",
				msg: fmt.Sprintf("request body larger than %d bytes", mbe.Limit)}
		}
		return nil, badRequest("", "reading the body: %v", err)
	}
	return b, nil
}

// unmarshalBody decodes a JSON body into v, a field of the wrong type a 400 naming it.
func unmarshalBody(b []byte, v any) *apiError {
	if err := json.Unmarshal(b, v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			for _, embedded := range []string{"SamplingFields.", "StructuredFields."} {
				ute.Field = strings.TrimPrefix(ute.Field, embedded)
			}
			return badRequest(ute.Field, "field %q: expected %s, got JSON %s", ute.Field, ute.Type, ute.Value)
		}
		return badRequest("", "invalid JSON body: %v", err)
	}
	return nil
}
