// The simulation: a router in front of replicas, each replica the engine's own Scheduler
// driven by simulated time. Events are the requests' arrivals (in order, from the workload)
// and the replicas' step ends (a heap: one pending step per busy replica). A step is
// Schedule -> (the profile's predicted time passes) -> UpdateTokens with a placeholder token
// for every sequence that needs one; a request finishes when the scheduler finishes it at its
// output length. The scheduler makes every decision, exactly as in the engine's step loop.

package sim

import (
	"cmp"
	"time"

	"errors"
	"fmt"
	"github.com/llmcloud/llmcloud/autoscale"
	"runtime"
	"slices"
	"sync"

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
	// Autoscale, if set, runs package autoscale's Autoscaler every AutoscaleInterval on the
	// ready replicas' load (sim/autoscale.go); Replicas is the starting count.
	Autoscale         *autoscale.Config
	AutoscaleInterval time.Duration
	// StartDelay is how long a replica added by the autoscaler takes to become ready (load
	// the model, answer /health) before the router sends it requests.
	StartDelay time.Duration
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
	Scaling     []ScaleEvent     // the autoscaler's changes (Autoscale only)
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

// Simulate runs reqs (sorted by arrival) through o.Replicas simulated replicas. Under
// round-robin routing, which reads no replica state, the replicas are split between
// GOMAXPROCS goroutines that simulate them independently (the same decisions as one loop:
// request i goes to replica i mod N either way); other policies run one event loop.
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
	newShard := func(ids []int) (*shard, error) {
		sh := &shard{o: &o, reqs: reqs, out: out, last: last, ids: ids, reps: make([]replica, len(ids)),
			hist: map[int64]int64{}, sampled: map[engine.SeqID][]int{}, coef: o.Profile.coef}
		for k := range sh.reps {
			if sh.reps[k].sched, err = engine.NewScheduler(cfg); err != nil {
				return nil, err
			}
		}
		return sh, nil
	}

	workers := min(runtime.GOMAXPROCS(0), o.Replicas)
	if policy.Name() == router.RoundRobin && workers > 1 && o.OnStep == nil && o.Autoscale == nil {
		shards := make([]*shard, workers)
		for w := range shards {
			var ids []int
			for k := w; k < o.Replicas; k += workers {
				ids = append(ids, k)
			}
			if shards[w], err = newShard(ids); err != nil {
				return nil, err
			}
		}
		for i := range reqs {
			k := i % o.Replicas
			sh := shards[k%workers]
			sh.order = append(sh.order, int32(i))
			sh.local = append(sh.local, int32(k/workers))
		}
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w, sh := range shards {
			wg.Go(func() { errs[w] = sh.run() })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		for _, sh := range shards {
			sh.merge(out)
		}
		out.RouterHits[router.ReasonRoundRobin] = int64(n)
	} else {
		total := o.Replicas
		if o.Autoscale != nil {
			if err := o.Autoscale.Validate(); err != nil {
				return nil, err
			}
			total = max(total, o.Autoscale.MaxReplicas)
		}
		ids := make([]int, total)
		for k := range ids {
			ids[k] = k
		}
		sh, err := newShard(ids)
		if err != nil {
			return nil, err
		}
		sh.policy = policy
		sh.cands = make([]router.Candidate, total)
		for k := range sh.cands {
			sh.cands[k].URL = fmt.Sprintf("http://replica-%05d", k)
		}
		sh.hits = out.RouterHits
		sh.ready = o.Replicas
		if o.Autoscale != nil {
			if err := sh.startAutoscale(); err != nil {
				return nil, err
			}
		}
		if err := sh.run(); err != nil {
			return nil, err
		}
		sh.merge(out)
	}
	for i := range reqs {
		if out.Errors[i] == "" && out.E2E[i] < 0 {
			out.Errors[i] = fmt.Sprintf("sim: request %d never finished (replica %d could not schedule it)", i, out.Replica[i])
			out.TTFT[i], out.E2E[i] = -1, -1
		}
	}
	out.PeakConc = peakConcurrency(reqs, out.E2E)
	return out, nil
}

// shard simulates some replicas: all of them with a policy routing each arrival, or a fixed
// share with the requests already assigned (order, local).
type shard struct {
	o     *Options
	reqs  []Request
	out   *Outcome // per-request slices: each shard writes only its requests' entries
	last  []int64
	ids   []int // global replica index of each local replica
	reps  []replica
	coef  Coefficients
	heap  stepHeap
	order []int32 // the requests this shard gets (nil: all, routed by policy)
	local []int32 // their local replica

	policy router.Policy
	cands  []router.Candidate // cands[:ready] are routable
	hits   map[string]int64
	ready  int

	scaler   *autoscale.Autoscaler
	target   int     // replicas the autoscaler wants
	readyAt  []int64 // when each replica being started becomes ready
	nextEval int64

	hist        map[int64]int64
	tokensPerS  []int64
	steps, pre  int64
	end         int64
	sampled     map[engine.SeqID][]int
	buf         []int
	nextScrape  int64
	placeholder [1]int
}

// merge adds the shard's totals to out.
func (sh *shard) merge(out *Outcome) {
	for g, c := range sh.hist {
		out.ITLHist[g] += c
	}
	for len(out.TokensPerS) < len(sh.tokensPerS) {
		out.TokensPerS = append(out.TokensPerS, 0)
	}
	for b, c := range sh.tokensPerS {
		out.TokensPerS[b] += c
	}
	out.Steps += sh.steps
	out.Preemptions += sh.pre
	out.End = max(out.End, sh.end)
}

// run is the event loop: arrivals in order, and step ends from the heap (an arrival at the
// same instant as a step end comes first, so the next Schedule sees it).
func (sh *shard) run() error {
	count := len(sh.reqs)
	if sh.order != nil {
		count = len(sh.order)
	}
	next := 0
	for next < count || sh.heap.len() > 0 {
		if next < count {
			i := next
			if sh.order != nil {
				i = int(sh.order[next])
			}
			if sh.heap.len() == 0 || sh.reqs[i].At <= sh.heap.top().at {
				k := 0
				if sh.order != nil {
					k = int(sh.local[next])
				} else {
					k = sh.route(i)
				}
				next++
				if err := sh.arrive(i, k); err != nil {
					return err
				}
				continue
			}
		}
		ev := sh.heap.pop()
		if err := sh.finishStep(int(ev.r), ev.at); err != nil {
			return err
		}
	}
	return nil
}

// route asks the policy for request i's replica, with the load the router knows: its own
// in-flight counts (exact) and the replicas' running, waiting and KV usage as of the last
// scrape (every ScrapeInterval).
func (sh *shard) route(i int) int {
	r := &sh.reqs[i]
	if r.At >= sh.nextScrape {
		for k := range sh.reps {
			s := sh.reps[k].sched
			sh.cands[k].Running, sh.cands[k].Waiting, sh.cands[k].KVUsage = float64(s.NumRunning()), float64(s.NumWaiting()), s.KVUsage()
		}
		sh.nextScrape = (r.At/ScrapeInterval + 1) * ScrapeInterval
	}
	in := router.Input{SessionKey: r.Session}
	if sh.policy.Name() == router.Prefix {
		in.Prompt = r.Text(i, 4096)
	}
	if sh.scaler != nil {
		sh.autoscale(r.At)
	}
	if sh.ready == 0 {
		return -1
	}
	d := sh.policy.Pick(in, sh.cands[:sh.ready])
	sh.hits[d.Reason]++
	return d.Index
}

// arrive hands request i to local replica k (-1: no replica is ready).
func (sh *shard) arrive(i, k int) error {
	r := &sh.reqs[i]
	if k < 0 {
		sh.out.Errors[i] = "sim: no replica ready (the fleet is scaled to zero or still starting)"
		sh.out.Replica[i] = -1
		return nil
	}
	sh.out.Replica[i] = int32(sh.ids[k])
	sh.buf = r.Tokens(i, sh.buf)
	if _, err := sh.reps[k].sched.AddRequest(engine.SeqRequest{ID: engine.SeqID(i), Prompt: sh.buf, MaxTokens: int(r.Output), ArrivalTime: r.At}); err != nil {
		sh.out.Errors[i] = err.Error()
		return nil
	}
	if sh.cands != nil {
		sh.cands[k].Inflight++
	}
	if !sh.reps[k].busy {
		return sh.start(k, r.At)
	}
	return nil
}

// start schedules local replica k's next step at time t, or leaves it idle.
func (sh *shard) start(k int, t int64) error {
	rp := &sh.reps[k]
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
	sh.steps++
	sh.pre += int64(len(plan.Preempted))
	sh.heap.push(stepEvent{at: t + int64(sh.coef.Seconds(PlanFeatures(plan))*1e9), r: int32(k)})
	return nil
}

// finishStep applies local replica k's step that ends at t: a placeholder token for every
// sequence that needs one, then the next step.
func (sh *shard) finishStep(k int, t int64) error {
	rp := &sh.reps[k]
	plan := rp.plan
	if sh.o.OnStep != nil {
		sh.o.OnStep(sh.ids[k], t, plan)
	}
	clear(sh.sampled)
	for i := range plan.Seqs {
		if plan.Seqs[i].NeedsLogits {
			sh.sampled[plan.Seqs[i].ID] = sh.placeholder[:]
		}
	}
	outs, err := rp.sched.UpdateTokens(plan, sh.sampled)
	if err != nil {
		return err
	}
	rp.plan = nil
	bin := int(t / 1e9)
	for len(sh.tokensPerS) <= bin {
		sh.tokensPerS = append(sh.tokensPerS, 0)
	}
	out := sh.out
	sh.tokensPerS[bin] += int64(len(outs))
	var gap0, n0 int64 // a run of equal gaps (a step's decodes mostly share one), counted at once
	for _, so := range outs {
		i := int(so.ID)
		if out.NumOut[i] == 0 {
			out.TTFT[i] = t - sh.reqs[i].At
		} else {
			gap := t - sh.last[i]
			if gap != gap0 && n0 > 0 {
				sh.hist[gap0] += n0
				n0 = 0
			}
			gap0 = gap
			n0++
			if out.ITLs != nil {
				out.ITLs[i] = append(out.ITLs[i], gap)
			}
		}
		out.NumOut[i]++
		sh.last[i] = t
		if so.Status.IsFinished() {
			out.E2E[i] = t - sh.reqs[i].At
			sh.end = max(sh.end, t)
			if sh.cands != nil {
				sh.cands[k].Inflight--
			}
		}
	}
	if n0 > 0 {
		sh.hist[gap0] += n0
	}
	return sh.start(k, t)
}

// peakConcurrency is the most requests in flight at once (arrived, not finished; an end and
// an arrival at the same instant: the end first, as bench counts).
func peakConcurrency(reqs []Request, e2e []int64) int {
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(reqs))
	for i, r := range reqs {
		if e2e[i] >= 0 {
			evs = append(evs, ev{r.At, 1}, ev{r.At + e2e[i], -1})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return a.d - b.d
	})
	cur, peak := 0, 0
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
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
