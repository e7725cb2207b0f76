// The simulation: a router in front of replicas, each replica the engine's own Scheduler
// driven by simulated time. Events are the requests' arrivals (in order, from the workload)
// and the replicas' step ends (a heap: one pending step per busy replica). A step is
// Schedule -> (the profile's predicted time passes) -> UpdateTokens with a placeholder token
// for every sequence that needs one; a request finishes when the scheduler finishes it at its
// output length. The scheduler makes every decision, exactly as in the engine's step loop.

package sim

import (
	"errors"
	"fmt"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/router"
)

// ScrapeInterval is how often the simulated router refreshes the replicas' scraped load
// (running, waiting, KV usage), as the router's health loop does every HealthInterval (1 s).
const ScrapeInterval = int64(1e9)

// Options configure a simulation.
type Options struct {
	Profile  *Profile
	Replicas int
	Router   string // a router policy name (router.NewPolicy); "" = round-robin
	// Detailed keeps every request's inter-token latencies (Result.ITLs); otherwise only
	// their distribution is kept (the statistics are the same).
	Detailed bool
	// OnStep, if set, sees every step of every replica: its plan before UpdateTokens (tests).
	OnStep func(replica int, at int64, plan *engine.StepPlan)
}

// Outcome is what happened to each request, and the run's totals.
type Outcome struct {
	Requests    []Request
	Replica     []int32 // where each request went
	TTFT, E2E   []int64 // ns; -1 for a failed request
	NumOut      []int32 // output tokens produced
	ITLs        [][]int64
	ITLHist     map[int64]int64 // every inter-token gap (ns) -> how many
	Errors      []string        // "" for a request that succeeded
	End         int64           // ns: the last request's end
	PeakConc    int
	TokensPerS  []int64 // output tokens per 1-second bin of the run
	Steps       int64
	Preemptions int64
	RouterHits  map[string]int64 // decisions by reason
}

type replica struct {
	sched *engine.Scheduler
	plan  *engine.StepPlan
	busy  bool
}

type stepEvent struct {
	at int64
	r  int32
}

// Simulate runs reqs (sorted by arrival) through o.Replicas simulated replicas.
func Simulate(o Options, reqs []Request) (*Outcome, error) {
	switch {
	case o.Profile == nil:
		return nil, errors.New("sim: no profile")
	case o.Replicas < 1:
		return nil, fmt.Errorf("sim: %d replicas: want at least 1", o.Replicas)
	case len(reqs) == 0:
		return nil, errors.New("sim: no requests")
	}
	if o.Router == router.PD {
		return nil, fmt.Errorf("sim: router policy %q (disaggregated prefill/decode) is not simulated; use %s, %s, %s or %s",
			o.Router, router.RoundRobin, router.LeastLoad, router.Prefix, router.Session)
	}
	policy, err := router.NewPolicy(o.Router)
	if err != nil {
		return nil, err
	}
	cfg := o.Profile.Engine.Scheduler()
	n := len(reqs)
	out := &Outcome{Requests: reqs, Replica: make([]int32, n), TTFT: make([]int64, n), E2E: make([]int64, n),
		NumOut: make([]int32, n), Errors: make([]string, n), ITLHist: map[int64]int64{}, RouterHits: map[string]int64{}}
	if o.Detailed {
		out.ITLs = make([][]int64, n)
	}
	for i := range out.E2E {
		out.TTFT[i], out.E2E[i] = -1, -1
	}
	last := make([]int64, n) // the time of each request's latest token
	reps := make([]replica, o.Replicas)
	cands := make([]router.Candidate, o.Replicas)
	for i := range reps {
		if reps[i].sched, err = engine.NewScheduler(cfg); err != nil {
			return nil, err
		}
		cands[i].URL = fmt.Sprintf("http://replica-%05d", i)
	}
	wantPrompt := policy.Name() == router.Prefix
	var heap stepHeap
	coef := o.Profile.coef
	sampled := map[engine.SeqID][]int{}
	placeholder := []int{0}
	var buf []int
	inflight, nextScrape := 0, int64(0)

	// start schedules replica k's next step at time t, or leaves it idle.
	start := func(k int, t int64) error {
		rp := &reps[k]
		rp.busy = false
		if !rp.sched.HasUnfinished() {
			return nil
		}
		plan := rp.sched.Schedule()
		if len(plan.Seqs) == 0 {
			// Nothing can run (a prompt the blocks cannot hold): the engine would spin; the
			// simulation waits for the next arrival to change anything.
			_, err := rp.sched.UpdateTokens(plan, nil)
			return err
		}
		rp.plan, rp.busy = plan, true
		out.Steps++
		out.Preemptions += int64(len(plan.Preempted))
		heap.push(stepEvent{at: t + int64(coef.Seconds(PlanFeatures(plan))*1e9), r: int32(k)})
		return nil
	}
	// finishStep applies replica k's step that ends at t.
	finishStep := func(k int, t int64) error {
		rp := &reps[k]
		plan := rp.plan
		if o.OnStep != nil {
			o.OnStep(k, t, plan)
		}
		clear(sampled)
		for i := range plan.Seqs {
			if plan.Seqs[i].NeedsLogits {
				sampled[plan.Seqs[i].ID] = placeholder
			}
		}
		outs, err := rp.sched.UpdateTokens(plan, sampled)
		if err != nil {
			return err
		}
		rp.plan = nil
		bin := int(t / 1e9)
		for len(out.TokensPerS) <= bin {
			out.TokensPerS = append(out.TokensPerS, 0)
		}
		for _, so := range outs {
			i := int(so.ID)
			out.TokensPerS[bin]++
			if out.NumOut[i] == 0 {
				out.TTFT[i] = t - reqs[i].At
			} else {
				gap := t - last[i]
				out.ITLHist[gap]++
				if o.Detailed {
					out.ITLs[i] = append(out.ITLs[i], gap)
				}
			}
			out.NumOut[i]++
			last[i] = t
			if so.Status.IsFinished() {
				out.E2E[i] = t - reqs[i].At
				out.End = max(out.End, t)
				cands[k].Inflight--
				inflight--
			}
		}
		return start(k, t)
	}

	next := 0
	for next < n || heap.len() > 0 {
		if next < n && (heap.len() == 0 || reqs[next].At <= heap.top().at) {
			i := next
			next++
			r := &reqs[i]
			t := r.At
			if t >= nextScrape {
				for k := range reps {
					s := reps[k].sched
					cands[k].Running, cands[k].Waiting, cands[k].KVUsage = float64(s.NumRunning()), float64(s.NumWaiting()), s.KVUsage()
				}
				nextScrape = (t/ScrapeInterval + 1) * ScrapeInterval
			}
			in := router.Input{SessionKey: r.Session}
			if wantPrompt {
				in.Prompt = r.Text(i, 4096)
			}
			d := policy.Pick(in, cands)
			k := d.Index
			out.RouterHits[d.Reason]++
			out.Replica[i] = int32(k)
			buf = r.Tokens(i, buf)
			_, err := reps[k].sched.AddRequest(engine.SeqRequest{ID: engine.SeqID(i), Prompt: buf, MaxTokens: int(r.Output), ArrivalTime: t})
			if err != nil {
				out.Errors[i] = err.Error()
				out.TTFT[i], out.E2E[i] = -1, -1
				continue
			}
			cands[k].Inflight++
			inflight++
			out.PeakConc = max(out.PeakConc, inflight)
			if !reps[k].busy {
				if err := start(k, t); err != nil {
					return nil, err
				}
			}
			continue
		}
		ev := heap.pop()
		if err := finishStep(int(ev.r), ev.at); err != nil {
			return nil, err
		}
	}
	for i := range reqs {
		if out.Errors[i] == "" && out.E2E[i] < 0 {
			out.Errors[i] = fmt.Sprintf("sim: request %d never finished (replica %d could not schedule it)", i, out.Replica[i])
			out.TTFT[i], out.E2E[i] = -1, -1
		}
	}
	return out, nil
}

// stepHeap is a binary min-heap of step ends by time (then replica, for determinism).
type stepHeap struct{ ev []stepEvent }

func (h *stepHeap) len() int       { return len(h.ev) }
func (h *stepHeap) top() stepEvent { return h.ev[0] }
func less(a, b stepEvent) bool     { return a.at < b.at || a.at == b.at && a.r < b.r }
func (h *stepHeap) push(e stepEvent) {
	h.ev = append(h.ev, e)
	i := len(h.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(h.ev[i], h.ev[p]) {
			break
		}
		h.ev[i], h.ev[p] = h.ev[p], h.ev[i]
		i = p
	}
}

func (h *stepHeap) pop() stepEvent {
	e := h.ev[0]
	last := len(h.ev) - 1
	h.ev[0] = h.ev[last]
	h.ev = h.ev[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && less(h.ev[l], h.ev[m]) {
			m = l
		}
		if r < last && less(h.ev[r], h.ev[m]) {
			m = r
		}
		if m == i {
			return e
		}
		h.ev[i], h.ev[m] = h.ev[m], h.ev[i]
		i = m
	}
}
