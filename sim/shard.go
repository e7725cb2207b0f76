// A shard's event loop: the replicas it simulates, each an engine.Scheduler; arrivals routed
// by the policy (or assigned beforehand) and handed to AddRequest; steps scheduled, timed by
// the profile and applied with UpdateTokens.

package sim

import (
	"fmt"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/router"
)

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
	heap  stepHeap  // step ends: real time, or virtual time when cpu is set
	cpu   *cpuShare // replicas sharing too few cores (sim/cpu.go); nil: each has its own
	extra int64     // ns added to every step (Options.StepOverhead)
	cfg   engine.Config
	order []int32 // the requests this shard gets, grouped by replica (nil: all, routed by policy)
	local []int32 // their local replica

	policy router.Policy
	cands  []router.Candidate // cands[:ready] are routable
	closed *closedLoop        // the client's --max-concurrency slots (sim/closed.go); nil: none
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
	buf         []int
	nextScrape  int64
	placeholder [1]int
	// placeholderTokens is the sampled "token" of every sequence that needs one (UpdateEach):
	// outputs are never read, only counted.
	placeholderTokens func(int) []int
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

// topAt is the real time of the next step end (the heap's top).
func (sh *shard) topAt() int64 {
	if sh.cpu != nil {
		return sh.cpu.real(sh.heap.top().at)
	}
	return sh.heap.top().at
}

// run simulates the shard: one event loop over every request (routed by the policy), or,
// with the requests assigned beforehand (order, grouped by local replica), one replica at a
// time: under round-robin (without shared CPUs) no replica's evolution depends on another's,
// so each can run its whole timeline alone, its state hot in the CPU's caches, with the same
// result.
func (sh *shard) run() error {
	if sh.order == nil {
		if sh.closed != nil {
			return sh.loopClosed()
		}
		return sh.loop(nil, nil)
	}
	for a := 0; a < len(sh.order); {
		b, k := a, sh.local[a]
		for b < len(sh.order) && sh.local[b] == k {
			b++
		}
		rp := &sh.reps[k]
		if rp.sched == nil {
			var err error
			if rp.sched, err = engine.NewScheduler(sh.cfg); err != nil {
				return err
			}
		}
		if err := sh.loop(sh.order[a:b], sh.local[a:b]); err != nil {
			return err
		}
		*rp = replica{} // done: its scheduler can go
		a = b
	}
	return nil
}

// loop is the event loop: arrivals in order, and step ends from the heap (an arrival at the
// same instant as a step end comes first, so the next Schedule sees it). order and local are
// the requests and their local replicas (nil: every request, routed by the policy); it
// returns when they have all arrived and every replica is idle.
func (sh *shard) loop(order, local []int32) error {
	count := len(sh.reqs)
	if order != nil {
		count = len(order)
	}
	next := 0
	for next < count || sh.heap.len() > 0 {
		if next < count {
			i := next
			if order != nil {
				i = int(order[next])
			}
			if sh.heap.len() == 0 || sh.reqs[i].At <= sh.topAt() {
				k := 0
				if order != nil {
					k = int(local[next])
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
		at := sh.topAt()
		ev := sh.heap.pop()
		if err := sh.finishStep(int(ev.r), at); err != nil {
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
	if limit := sh.o.Profile.Engine.MaxModelLen; limit > 0 && int(r.PromptLen)+int(r.Output) > limit {
		// The server refuses it before the engine sees it (server/generate.go).
		sh.out.Errors[i] = fmt.Sprintf("HTTP 400: the prompt (%d tokens) plus max_tokens (%d) is %d tokens over max-model-len %d",
			r.PromptLen, r.Output, int(r.PromptLen)+int(r.Output)-limit, limit)
		return nil
	}
	sh.buf = r.Tokens(i, sh.buf)
	if _, err := sh.reps[k].sched.AddRequest(engine.SeqRequest{ID: engine.SeqID(i), Prompt: sh.buf, MaxTokens: int(r.Output), ArrivalTime: r.At}); err != nil {
		sh.out.Errors[i] = err.Error()
		return nil
	}
	if sh.cands != nil {
		sh.cands[k].Inflight++
	}
	if !sh.reps[k].busy {
		// The idle replica's step loop wakes: its first Schedule runs once every request
		// arriving at this same instant is in (a wake-up event, taken after those arrivals),
		// as the engine's loop takes its whole inbox before scheduling.
		sh.reps[k].busy = true
		at := r.At
		if sh.cpu != nil {
			at = sh.cpu.key(at)
		}
		sh.heap.push(stepEvent{at: at, r: int32(k)})
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
	for i := range plan.Seqs {
		if s := &plan.Seqs[i]; s.Prefill && sh.out.Cached[s.ID] < 0 {
			sh.out.Cached[s.ID] = int32(s.StartPos) // a first chunk starts after the cached prefix
		}
	}
	sh.steps++
	sh.pre += int64(len(plan.Preempted))
	work := int64(sh.coef.Seconds(PlanFeatures(plan))*1e9) + sh.extra
	if sh.cpu != nil {
		sh.heap.push(stepEvent{at: sh.cpu.begin(t, work), r: int32(k)})
		return nil
	}
	sh.heap.push(stepEvent{at: t + work, r: int32(k)})
	return nil
}

// finishStep applies local replica k's step that ends at t: a placeholder token for every
// sequence that needs one, then the next step (or, after a wake-up, just the first).
func (sh *shard) finishStep(k int, t int64) error {
	rp := &sh.reps[k]
	plan := rp.plan
	if plan == nil { // a wake-up: nothing ran
		return sh.start(k, t)
	}
	if sh.cpu != nil {
		sh.cpu.end(t)
	}
	if sh.o.OnStep != nil {
		sh.o.OnStep(sh.ids[k], t, plan)
	}
	outs, err := rp.sched.UpdateEach(plan, sh.placeholderTokens)
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
			if sh.closed != nil {
				sh.closed.finished(sh, i)
			}
		}
	}
	if n0 > 0 {
		sh.hist[gap0] += n0
	}
	return sh.start(k, t)
}
