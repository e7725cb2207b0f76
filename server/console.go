// console.go serves the web console's view of this replica (package console): GET
// /console/api/cloud (the engine's state as the one replica) and GET /console/api/requests (the
// last finished requests' traces, kept in a fixed-size ring filled as each request finishes).
// The page itself is package ui, mounted at / when Options.UI is set.
package server

import (
	"net/http"
	"time"

	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/ui"
)

// routeConsole registers the console's endpoints and, with Options.UI, the page.
func (s *Server) routeConsole() {
	s.route("GET", console.CloudPath, http.HandlerFunc(s.handleConsoleCloud))
	s.route("GET", console.RequestsPath, http.HandlerFunc(s.handleConsoleRequests))
	if s.opts.UI {
		ui.Mount(s.mux, ui.Options{Mode: ui.ModeServe})
	}
}

// consoleReplica is this replica as the console's cloud view lists it.
func (s *Server) consoleReplica() console.Replica {
	r := console.Replica{Name: "self", State: console.StateStarting, Role: s.opts.KVRole,
		Model: s.metrics.name(), Requests: s.traces.Total()}
	if r.Role == "" {
		r.Role = "both"
	}
	st := s.state.Load()
	if st == nil {
		return r
	}
	r.State, r.Healthy = console.StateReady, true
	if s.closing.Load() {
		r.State, r.Healthy = console.StateDraining, false
	}
	e := st.eng.Stats()
	r.Running, r.Waiting, r.KVUsage = float64(e.Running), float64(e.Waiting), e.KVUsage
	r.PrefixQueries, r.PrefixHits = int64(e.PrefixQueryTokens), int64(e.PrefixHitTokens)
	r.PromptTokens, r.GenerationTokens = int64(e.PromptTokens), int64(e.GenerationTokens)
	return r
}

func (s *Server) handleConsoleCloud(w http.ResponseWriter, r *http.Request) {
	console.WriteJSON(w, http.StatusOK, console.Cloud{Mode: console.ModeServe, Time: time.Now(),
		HealthInterval: 2, Replicas: []console.Replica{s.consoleReplica()}, Autoscale: []console.Decision{}})
}

func (s *Server) handleConsoleRequests(w http.ResponseWriter, r *http.Request) {
	n, err := console.Limit(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_value", "limit", err.Error())
		return
	}
	console.WriteJSON(w, http.StatusOK, console.Requests{Requests: s.traces.Last(n)})
}

// trace records a finished request's timeline in the ring.
func (s *Server) trace(id string, o engine.Output) {
	mt := o.Metrics
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	t := console.Trace{ID: id, Model: s.metrics.name(), QueueMs: ms(mt.QueueTime()),
		PrefillMs: ms(mt.PrefillTime()), DecodeMs: ms(mt.DecodeTime()),
		PromptTokens: o.PromptTokens, OutputTokens: o.OutputTokens, FinishReason: o.FinishReason}
	if !mt.Arrival.IsZero() {
		t.ArrivalUnix = float64(mt.Arrival.UnixMicro()) / 1e6
		if !mt.Finished.IsZero() {
			t.E2EMs = ms(mt.Finished.Sub(mt.Arrival))
		}
	}
	if o.Err != nil {
		t.FinishReason, t.Error = "error", o.Err.Error()
	}
	s.traces.Add(t)
}
