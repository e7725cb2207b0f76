// The router's side of the web console (package console, docs/console.md): GET
// /console/api/cloud lists every backend as the router sees it (health, load, role), overlaid
// with the backend's own replica entry from its /console/api/cloud when it answers within the
// health timeout; GET /console/api/requests merges the healthy backends' last requests, each
// named by its replica. Both scrape the backends concurrently, only when asked (the console
// polls at most every two seconds), so the router pays nothing while nobody looks.

package router

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/console"
)

// ReplicaName is how the console names a backend the router knows only by URL: its host:port
// (and path).
func ReplicaName(backendURL string) string {
	if u, err := url.Parse(backendURL); err == nil && u.Host != "" {
		return u.Host + u.Path
	}
	return backendURL
}

// ConsoleReplicas returns each backend as the console lists it, sorted by URL: URL and
// Name (ReplicaName) set, State "ready" or "down" by the router's health, the load the router
// scraped, and, for the healthy backends that serve /console/api/cloud, their own counters,
// model and role.
func (r *Router) ConsoleReplicas(ctx context.Context) []console.Replica {
	bs := r.Backends()
	out := make([]console.Replica, len(bs))
	ctx, cancel := context.WithTimeout(ctx, r.opts.HealthTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, b := range bs {
		rep := console.Replica{Name: ReplicaName(b.URL), URL: b.URL, State: console.StateDown, Healthy: b.Healthy,
			Role: b.KVRole, Running: b.Running, Waiting: b.Waiting, KVUsage: b.KVUsage, Requests: b.Requests}
		if rep.Role == "" {
			rep.Role = "both"
		}
		if len(b.Models) > 0 {
			rep.Model = b.Models[0]
		}
		if b.Healthy {
			rep.State = console.StateReady
		}
		out[i] = rep
		if !b.Healthy {
			continue
		}
		wg.Go(func() {
			var c console.Cloud
			if err := console.Fetch(ctx, r.probe, b.URL, console.CloudPath, r.opts.BackendKey, &c); err != nil || len(c.Replicas) != 1 {
				return // not an llmcloud replica, or too slow: the router's own view stays
			}
			own := c.Replicas[0]
			rep := &out[i]
			rep.Model, rep.Role = own.Model, own.Role
			rep.Running, rep.Waiting, rep.KVUsage = own.Running, own.Waiting, own.KVUsage
			rep.PrefixQueries, rep.PrefixHits = own.PrefixQueries, own.PrefixHits
			rep.PromptTokens, rep.GenerationTokens, rep.Requests = own.PromptTokens, own.GenerationTokens, own.Requests
		})
	}
	wg.Wait()
	return out
}

// ConsoleRequests returns the last n requests over the healthy backends, newest first, each
// with Replica set to name(backend URL) (ReplicaName when name is nil).
func (r *Router) ConsoleRequests(ctx context.Context, n int, name func(string) string) []console.Trace {
	if name == nil {
		name = ReplicaName
	}
	var healthy []string
	for _, b := range r.Backends() {
		if b.Healthy {
			healthy = append(healthy, b.URL)
		}
	}
	lists := make([][]console.Trace, len(healthy))
	ctx, cancel := context.WithTimeout(ctx, r.opts.HealthTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, u := range healthy {
		wg.Go(func() {
			var rs console.Requests
			if console.Fetch(ctx, r.probe, u, console.RequestsPath+"?limit="+strconv.Itoa(n), r.opts.BackendKey, &rs) != nil {
				return
			}
			for j := range rs.Requests {
				rs.Requests[j].Replica = name(u)
			}
			lists[i] = rs.Requests
		})
	}
	wg.Wait()
	return console.Merge(n, lists...)
}

func (r *Router) serveConsoleCloud(w http.ResponseWriter, req *http.Request) {
	console.WriteJSON(w, http.StatusOK, console.Cloud{Mode: console.ModeRouter, Time: time.Now(),
		HealthInterval: r.opts.HealthInterval.Seconds(), Replicas: r.ConsoleReplicas(req.Context()),
		Autoscale: []console.Decision{}})
}

func (r *Router) serveConsoleRequests(w http.ResponseWriter, req *http.Request) {
	n, err := console.Limit(req)
	if err != nil {
		console.WriteError(w, http.StatusBadRequest, "invalid_value", err.Error())
		return
	}
	console.WriteJSON(w, http.StatusOK, console.Requests{Requests: r.ConsoleRequests(req.Context(), n, nil)})
}
