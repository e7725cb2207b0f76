// The up command's status: one snapshot of the fleet (supervisor + router + autoscaler) served
// as JSON on GET /cloud/status and shown every --status-interval, as a redrawn table when
// stdout is a terminal, as one log line per interval otherwise.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/cloud"
	"github.com/llmcloud/llmcloud/router"
)

// replicaView is one replica as the status shows it.
type replicaView struct {
	Name     string  `json:"name"`
	URL      string  `json:"url"`
	PID      int     `json:"pid"`
	State    string  `json:"state"`
	Healthy  bool    `json:"healthy"` // the router's view
	Running  float64 `json:"running"`
	Waiting  float64 `json:"waiting"`
	KVUsage  float64 `json:"kv_usage"` // 0..1
	Inflight int     `json:"inflight"`
	Requests int64   `json:"requests"`
	Failures int64   `json:"failures"`
	Restarts int     `json:"restarts"`
	// Prefix cache, from the replica's /metrics (prompt tokens since it started).
	PrefixQueries float64 `json:"prefix_cache_queries"`
	PrefixHits    float64 `json:"prefix_cache_hits"`
	LastExit      string  `json:"last_exit,omitempty"`
	SinceUnix     float64 `json:"since_unix"` // when State was entered
}

// fleetView is the whole status.
type fleetView struct {
	Time     time.Time     `json:"time"`
	Replicas []replicaView `json:"replicas"`
	Requests int64         `json:"requests"` // router's upstream attempts, over the replicas listed
	Failures int64         `json:"failures"`
	Inflight int           `json:"inflight"`
	// The fleet's prefix cache: hits / queries over the replicas listed.
	PrefixQueries float64       `json:"prefix_cache_queries"`
	PrefixHits    float64       `json:"prefix_cache_hits"`
	PrefixHitRate float64       `json:"prefix_cache_hit_rate"`
	Autoscale     *decisionView `json:"autoscale,omitempty"`
}

type decisionView struct {
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Before  int       `json:"before"`
	After   int       `json:"after"`
	Desired int       `json:"desired"`
	Sum     float64   `json:"sum"`
	Reason  string    `json:"reason"`
}

func cloudStatus(ctx context.Context, sup *cloud.Supervisor, rt *router.Router, ctl *autoscale.Controller) fleetView {
	byURL := map[string]router.BackendStatus{}
	for _, b := range rt.Backends() {
		byURL[b.URL] = b
	}
	v := fleetView{Time: time.Now()}
	reps := sup.Status()
	caches := make([]cloud.PrefixCache, len(reps))
	var wg sync.WaitGroup
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for i, r := range reps {
		if r.State == cloud.Ready {
			wg.Go(func() { caches[i], _ = cloud.ScrapePrefixCache(sctx, http.DefaultClient, r.URL) })
		}
	}
	wg.Wait()
	for i, r := range reps {
		b := byURL[r.URL]
		rv := replicaView{Name: r.Name, URL: r.URL, PID: r.PID, State: string(r.State), Healthy: b.Healthy,
			Running: b.Running, Waiting: b.Waiting, KVUsage: b.KVUsage, Inflight: b.Inflight,
			Requests: b.Requests, Failures: b.Failures, Restarts: r.Restarts, LastExit: r.LastExit,
			PrefixQueries: caches[i].QueriesTokens, PrefixHits: caches[i].HitsTokens,
			SinceUnix: float64(r.Since.UnixMilli()) / 1e3}
		v.Replicas = append(v.Replicas, rv)
		v.Requests += b.Requests
		v.Failures += b.Failures
		v.Inflight += b.Inflight
		v.PrefixQueries += rv.PrefixQueries
		v.PrefixHits += rv.PrefixHits
	}
	v.PrefixHitRate = cloud.PrefixCache{QueriesTokens: v.PrefixQueries, HitsTokens: v.PrefixHits}.HitRate()
	if ctl != nil {
		if d := ctl.Last(); !d.Time.IsZero() {
			v.Autoscale = &decisionView{Time: d.Time, Action: string(d.Action), Before: d.Before, After: d.After,
				Desired: d.Desired, Sum: d.Sum, Reason: d.Reason}
		}
	}
	return v
}

// renderTable writes the status as a table.
func renderTable(w io.Writer, v fleetView) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tURL\tPID\tSTATE\tHEALTHY\tRUNNING\tWAITING\tKV%\tPREFIX-HIT%\tREQUESTS\tFAILURES\tRESTARTS")
	for _, r := range v.Replicas {
		hit := cloud.PrefixCache{QueriesTokens: r.PrefixQueries, HitsTokens: r.PrefixHits}.HitRate()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%g\t%g\t%.1f\t%.1f\t%d\t%d\t%d\n", r.Name, r.URL, r.PID, r.State, r.Healthy,
			r.Running, r.Waiting, 100*r.KVUsage, 100*hit, r.Requests, r.Failures, r.Restarts)
	}
	tw.Flush()
	fmt.Fprintf(w, "router: %d requests, %d failures, %d in flight; fleet prefix-cache hit rate %.1f%%\n",
		v.Requests, v.Failures, v.Inflight, 100*v.PrefixHitRate)
	if a := v.Autoscale; a != nil {
		fmt.Fprintf(w, "autoscaler: %s %d -> %d (desired %d, sum %g): %s\n", a.Action, a.Before, a.After, a.Desired, a.Sum, a.Reason)
	}
}

// statusLine is the one-line form for logs.
func statusLine(v fleetView) string {
	var b strings.Builder
	for i, r := range v.Replicas {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s[pid=%d %s healthy=%v run=%g wait=%g kv=%.1f%% req=%d fail=%d restarts=%d]",
			r.Name, r.PID, r.State, r.Healthy, r.Running, r.Waiting, 100*r.KVUsage, r.Requests, r.Failures, r.Restarts)
	}
	return b.String()
}

// showStatus refreshes the status every interval until ctx ends.
func showStatus(ctx context.Context, stdout io.Writer, tty bool, every time.Duration, sup *cloud.Supervisor,
	rt *router.Router, ctl *autoscale.Controller, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v := cloudStatus(ctx, sup, rt, ctl)
		if tty {
			var b strings.Builder
			b.WriteString("\x1b[H\x1b[2J") // home, clear screen
			fmt.Fprintf(&b, "llmcloud up — %s (Ctrl-C stops)\n\n", v.Time.Format(time.TimeOnly))
			renderTable(&b, v)
			io.WriteString(stdout, b.String())
			continue
		}
		log.Info("status", "replicas", len(v.Replicas), "requests", v.Requests, "failures", v.Failures,
			"inflight", v.Inflight, "prefix_hit_rate", v.PrefixHitRate, "fleet", statusLine(v))
	}
}
