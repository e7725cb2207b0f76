// The up command's side of the web console (package console, docs/console.md): the page at /
// (unless --no-ui), GET /console/api/cloud with the supervisor's replicas (state, restarts)
// joined to what the router sees and scrapes of them, plus the autoscaler's recent decisions,
// and GET /console/api/requests merged from the ready replicas under their supervisor names.
package main

import (
	"net/http"
	"time"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/cloud"
	"github.com/llmcloud/llmcloud/console"
	"github.com/llmcloud/llmcloud/router"
	"github.com/llmcloud/llmcloud/ui"
)

// mountConsole registers the console on up's mux.
func mountConsole(mux *http.ServeMux, page bool, health time.Duration, sup *cloud.Supervisor, rt *router.Router, ctl *autoscale.Controller) {
	if page {
		ui.Mount(mux, ui.Options{Mode: ui.ModeUp})
	}
	mux.HandleFunc("GET "+console.CloudPath, func(w http.ResponseWriter, req *http.Request) {
		console.WriteJSON(w, http.StatusOK, upCloud(req, health, sup, rt, ctl))
	})
	mux.HandleFunc("GET "+console.RequestsPath, func(w http.ResponseWriter, req *http.Request) {
		n, err := console.Limit(req)
		if err != nil {
			console.WriteError(w, http.StatusBadRequest, "invalid_value", err.Error())
			return
		}
		names := map[string]string{}
		for _, r := range sup.Status() {
			names[r.URL] = r.Name
		}
		name := func(u string) string {
			if n, ok := names[u]; ok {
				return n
			}
			return router.ReplicaName(u)
		}
		console.WriteJSON(w, http.StatusOK, console.Requests{Requests: rt.ConsoleRequests(req.Context(), n, name)})
	})
}

// upCloud is the fleet as the console shows it: every supervised replica, in the supervisor's
// order, with the router's health and load and the replica's own counters.
func upCloud(req *http.Request, health time.Duration, sup *cloud.Supervisor, rt *router.Router, ctl *autoscale.Controller) console.Cloud {
	seen := map[string]console.Replica{}
	for _, r := range rt.ConsoleReplicas(req.Context()) {
		seen[r.URL] = r
	}
	c := console.Cloud{Mode: console.ModeUp, Time: time.Now(), HealthInterval: health.Seconds(),
		Replicas: []console.Replica{}, Autoscale: []console.Decision{}}
	for _, s := range sup.Status() {
		r, ok := seen[s.URL]
		if !ok || s.URL == "" {
			r = console.Replica{Role: "both"} // not (or no longer) behind the router
		}
		r.Name, r.URL, r.State, r.Restarts = s.Name, s.URL, string(s.State), s.Restarts
		r.Healthy = r.Healthy && s.State == cloud.Ready
		c.Replicas = append(c.Replicas, r)
	}
	if ctl != nil {
		for _, d := range ctl.History() {
			c.Autoscale = append(c.Autoscale, console.Decision{Time: d.Time, Action: string(d.Action),
				Before: d.Before, After: d.After, Desired: d.Desired, Reason: d.Reason})
		}
	}
	return c
}
