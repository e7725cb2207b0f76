// Package console holds the JSON the web console reads (package ui serves the pages;
// docs/console.md): the cloud view of /console/api/cloud, the per-request traces of
// /console/api/requests, and the fixed-size ring of traces a replica keeps. It imports no
// compute code, so the router uses it as serve does.
package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The console's endpoints.
const (
	CloudPath    = "/console/api/cloud"
	RequestsPath = "/console/api/requests"
	RunPath      = "/console/api/run"
)

// Modes of Cloud.Mode: which process answered.
const (
	ModeServe  = "serve"
	ModeRouter = "router"
	ModeUp     = "up"
)

// Cloud is GET /console/api/cloud: the replicas behind this process and the autoscaler's
// latest decisions.
type Cloud struct {
	Mode           string     `json:"mode"`
	Time           time.Time  `json:"time"`
	HealthInterval float64    `json:"health_interval_s"` // how often the page should poll
	Replicas       []Replica  `json:"replicas"`
	Autoscale      []Decision `json:"autoscale"` // oldest first, at most 50; [] without an autoscaler
}

// Replica is one serving process. The counters are totals since the replica started (the page
// turns successive polls into rates).
type Replica struct {
	Name             string  `json:"name"`
	URL              string  `json:"url"` // "" when a replica describes itself
	State            string  `json:"state"`
	Healthy          bool    `json:"healthy"`
	Role             string  `json:"role"` // both, producer or consumer (disaggregated prefill/decode)
	Model            string  `json:"model"`
	Running          float64 `json:"running"`
	Waiting          float64 `json:"waiting"`
	KVUsage          float64 `json:"kv_usage"` // 0..1
	PrefixQueries    int64   `json:"prefix_cache_queries"`
	PrefixHits       int64   `json:"prefix_cache_hits"`
	PromptTokens     int64   `json:"prompt_tokens"`
	GenerationTokens int64   `json:"generation_tokens"`
	Requests         int64   `json:"requests"`
	Restarts         int     `json:"restarts"`
}

// Replica states besides the supervisor's own (cloud.State).
const (
	StateReady    = "ready"
	StateStarting = "starting" // loading its model
	StateDraining = "draining" // shutting down: finishing its running requests
	StateDown     = "down"
)

// Decision is one autoscaler evaluation.
type Decision struct {
	Time    time.Time `json:"time"`
	Action  string    `json:"action"` // up, down or hold
	Before  int       `json:"before"`
	After   int       `json:"after"`
	Desired int       `json:"desired"`
	Reason  string    `json:"reason"`
}

// Requests is GET /console/api/requests: the last finished requests, newest first.
type Requests struct {
	Requests []Trace `json:"requests"`
}

// Trace is one finished request's timeline: queue (arrival to its first step), prefill (first
// step to first token), decode (first to last token), e2e (arrival to finish).
type Trace struct {
	ID           string  `json:"id"`
	Replica      string  `json:"replica"` // "" on the replica itself; the router and up name it
	Model        string  `json:"model"`
	ArrivalUnix  float64 `json:"arrival_unix"`
	QueueMs      float64 `json:"queue_ms"`
	PrefillMs    float64 `json:"prefill_ms"`
	DecodeMs     float64 `json:"decode_ms"`
	E2EMs        float64 `json:"e2e_ms"`
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	FinishReason string  `json:"finish_reason"` // stop, length, abort or error
	Error        string  `json:"error"`
}

// finishUnix is when the request finished, the order of the list.
func (t Trace) finishUnix() float64 { return t.ArrivalUnix + t.E2EMs/1e3 }

// Request limits of ?limit=N.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Limit reads ?limit=N: DefaultLimit when absent, at most MaxLimit; anything but a positive
// integer is an error naming the value.
func Limit(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("limit %q: want a positive integer (at most %d)", s, MaxLimit)
	}
	return min(n, MaxLimit), nil
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// WriteError answers an OpenAI-style error body.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	type body struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	}
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status >= 500:
		typ = "server_error"
	}
	WriteJSON(w, status, struct {
		Error body `json:"error"`
	}{body{msg, typ, code}})
}
