// The simulation: a router in front of replicas, each replica the engine's own Scheduler
// driven by simulated time. Events are the requests' arrivals (in order, from the workload)
// and the replicas' step ends (a heap: one pending step per busy replica). A step is
// Schedule -> (the profile's predicted time passes) -> UpdateTokens with a placeholder token
// for every sequence that needs one; a request finishes when the scheduler finishes it at its
// output length. The scheduler makes every decision, exactly as in the engine's step loop.

package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/autoscale"
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
	// CPUs, if positive, is how many cores all the replicas share (`up` on one host): while
	// more replicas step at once than the cores hold threads for, each step is slower
	// (sim/cpu.go). 0: every replica has the profile's threads to itself.
	CPUs float64
	// StepOverhead is added to every step's predicted time: the engine loop's work outside
	// the forward pass and sampling that the profile does not measure.
	StepOverhead time.Duration
	// RequestOverhead is added to every request's TTFT and E2EL: the time outside the engine
	// (client, router, HTTP, tokenization; arrival to engine and token to client). A constant
	// delay on every arrival shifts the engine's whole schedule by as much, so adding it
	// afterwards is exact.
	RequestOverhead time.Duration
	// Overheads, if set, replaces RequestOverhead with a measured distribution: each request
	// gets one of them (drawn with OverheadSeed; of its own prefix-cache outcome when they
	// give theirs) added to its TTFT and to each inter-token gap (sim/jitter.go).
	Overheads    []Overhead
	OverheadSeed uint64
	// MaxConcurrency, if positive, caps the requests in flight as bench serve
	// --max-concurrency does (sim/closed.go): a request arriving while that many are in
	// flight is sent when one ends as the client sees it (overhead included). Outcome.Requests
	// is then a copy whose At is each request's send time, from which its TTFT and E2E count.
	MaxConcurrency int
}

// Outcome is what happened to each request, and the run's totals.
type Outcome struct {
	Requests    []Request
	Replica     []int32 // where each request went
	TTFT, E2E   []int64 // ns; -1 for a failed request
	NumOut      []int32 // output tokens produced
	Cached      []int32 // prompt tokens the prefix cache supplied when first scheduled; -1: never scheduled
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
// GOMAXPROCS goroutines that simulate them independently and one at a time (the same
// decisions as one loop: request i goes to replica i mod N either way, and a replica's steps
// depend only on its own requests); other policies run one event loop.
func Simulate(o Options, reqs []Request) (*Outcome, error) {
	switch {
	case o.Profile == nil:
		return nil, errors.New("sim: no profile")
	case o.Replicas < 1:
		return nil, fmt.Errorf("sim: %d replicas: want at least 1", o.Replicas)
	case len(reqs) == 0:
		return nil, errors.New("sim: no requests")
	case o.CPUs < 0 || math.IsNaN(o.CPUs) || math.IsInf(o.CPUs, 0):
		return nil, fmt.Errorf("sim: %v CPUs: want a positive count (or 0: every replica has its own)", o.CPUs)
	case o.MaxConcurrency < 0:
		return nil, fmt.Errorf("sim: max concurrency %d: want a positive cap (or 0: none)", o.MaxConcurrency)
	case o.StepOverhead < 0 || o.RequestOverhead < 0:
		return nil, fmt.Errorf("sim: negative overhead (step %v, request %v)", o.StepOverhead, o.RequestOverhead)
	}
	if err := checkOverheads(&o); err != nil {
		return nil, err
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
	if o.MaxConcurrency > 0 {
		reqs = slices.Clone(reqs) // the send times replace the arrivals
	}
	n := len(reqs)
	out := &Outcome{Requests: reqs, Replica: make([]int32, n), TTFT: make([]int64, n), E2E: make([]int64, n),
		NumOut: make([]int32, n), Cached: make([]int32, n), Errors: make([]string, n), ITLHist: map[int64]int64{},
		RouterHits: map[string]int64{}}
	if o.Detailed || len(o.Overheads) > 0 {
		out.ITLs = make([][]int64, n)
	}
	for i := range out.E2E {
		out.TTFT[i], out.E2E[i], out.Cached[i] = -1, -1, -1
	}
	last := make([]int64, n) // the time of each request's latest token
	total := o.Replicas
	if o.Autoscale != nil {
		total = max(total, o.Autoscale.MaxReplicas)
	}
	shared := newCPUShare(o.CPUs, o.Profile.Threads, total) != nil
	// newShard makes a shard of the replicas ids; their schedulers are made now (lazy: when
	// run comes to each, for a shard simulating one replica at a time).
	newShard := func(ids []int, lazy bool) (*shard, error) {
		sh := &shard{o: &o, reqs: reqs, out: out, last: last, ids: ids, reps: make([]replica, len(ids)),
			hist: map[int64]int64{}, coef: o.Profile.coef, cfg: cfg,
			cpu: newCPUShare(o.CPUs, o.Profile.Threads, len(ids)), extra: int64(o.StepOverhead)}
		sh.placeholderTokens = func(int) []int { return sh.placeholder[:] }
		if _, err := engine.NewScheduler(cfg); err != nil {
			return nil, err
		}
		for k := range sh.reps {
			if !lazy {
				sh.reps[k].sched, _ = engine.NewScheduler(cfg) // cfg is valid: checked above
			}
		}
		return sh, nil
	}

	var closed *closedLoop
	workers := min(runtime.GOMAXPROCS(0), o.Replicas)
	if policy.Name() == router.RoundRobin && workers > 1 && o.OnStep == nil && o.Autoscale == nil && !shared && o.MaxConcurrency == 0 {
		shards := make([]*shard, workers)
		for w := range shards {
			var ids []int
			for k := w; k < o.Replicas; k += workers {
				ids = append(ids, k)
			}
			if shards[w], err = newShard(ids, true); err != nil {
				return nil, err
			}
		}
		// Each shard's requests grouped by replica (request i goes to replica i mod N), in
		// arrival order within each: the shard simulates its replicas one after another.
		for _, sh := range shards {
			sh.order, sh.local = make([]int32, 0, (n+workers-1)/workers), make([]int32, 0, (n+workers-1)/workers)
			for j, k := range sh.ids {
				for i := k; i < n; i += o.Replicas {
					sh.order = append(sh.order, int32(i))
					sh.local = append(sh.local, int32(j))
				}
			}
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
		if o.Autoscale != nil {
			if err := o.Autoscale.Validate(); err != nil {
				return nil, err
			}
		}
		ids := make([]int, total)
		for k := range ids {
			ids[k] = k
		}
		sh, err := newShard(ids, false)
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
		sh.closed = newClosedLoop(&o, n)
		closed = sh.closed
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
	if d := int64(o.RequestOverhead); d > 0 {
		for i := range reqs {
			if out.Errors[i] == "" {
				out.TTFT[i] += d
				out.E2E[i] += d
			}
		}
		out.End += d
	}
	if len(o.Overheads) > 0 {
		if closed != nil {
			applyEach(out, func(i int) Overhead { return closed.drawn[i] })
		} else {
			applyOverheads(out, o.Overheads, o.OverheadSeed)
		}
		if !o.Detailed {
			out.ITLs = nil
		}
	}
	out.PeakConc = peakConcurrency(reqs, out.E2E)
	return out, nil
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
