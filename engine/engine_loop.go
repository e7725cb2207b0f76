// This file implements the engine's step loop, the only goroutine that touches the scheduler,
// the KV pool and the samplers:
//
//	apply the inbox (adds, aborts) -> Schedule -> runner.execute (masks beside the forward,
//	sample) -> abort rejected constraints -> Update -> append forced tokens (Forcer) ->
//	stream outputs, Finish on stop strings and completed constraints -> propose drafts for
//	the next step (engine_spec.go) -> publish Stats, OnStep
//
// It sleeps when nothing is live and exits after Shutdown once idle. Aborts and stop strings
// finish sequences between steps, so their blocks are free before the next Schedule.

package engine

import (
	"runtime"
	"time"

	"fmt"
	"slices"

	"github.com/llmcloud/llmcloud/sample"
)

func (e *Engine) loop() {
	defer close(e.done)
	bySeq := map[SeqID]*reqState{}
	samplerOf := func(id SeqID) *seqSampler { return &bySeq[id].dec }
	for {
		e.mu.Lock()
		events := e.inbox
		e.inbox = nil
		abortAll := e.abortAll
		e.mu.Unlock()
		for _, ev := range events {
			st := ev.r
			switch ev.kind {
			case evAdd:
				e.admit(st, bySeq)
			case evExport:
				e.exportKV(ev.x)
			case evAbort:
				if !st.finished {
					_ = e.sched.Abort(st.seq)
					e.finish(st, bySeq, FinishAbort, nil)
				}
			}
		}
		if abortAll {
			for _, st := range bySeq {
				_ = e.sched.Abort(st.seq)
				e.finish(st, bySeq, FinishAbort, nil)
			}
		}
		for _, st := range bySeq {
			st.flushPending()
		}
		if !e.sched.HasUnfinished() {
			e.publish()
			e.mu.Lock()
			exit := e.draining && len(e.inbox) == 0
			e.mu.Unlock()
			if exit {
				return
			}
			if len(events) == 0 && !abortAll {
				<-e.wake
			}
			continue
		}
		e.step(bySeq, samplerOf)
		e.feedStreams()
		e.publish()
		// Let the goroutines this step's outputs woke (the HTTP handlers writing each stream's
		// event) run before the next step. With few Ps (a replica pinned to one CPU has
		// GOMAXPROCS 1) the loop would otherwise run step after step and they would write only
		// when the scheduler preempts it, several events at a time: tokens in bursts.
		runtime.Gosched()
	}
}

// admit hands a new request to the scheduler.
func (e *Engine) admit(st *reqState, bySeq map[SeqID]*reqState) {
	r := st.req
	stopIDs := slices.Clone(r.StopTokenIDs)
	if !r.IgnoreEOS {
		stopIDs = append(stopIDs, e.eog...)
	}
	bySeq[st.seq] = st
	if len(r.ImportKV) > 0 {
		// Add checked the rows' layout; a block that cannot be installed is recomputed.
		_, _ = e.importKV(st)
		st.req.ImportKV = nil // installed or not, the rows are not needed again
	}
	if c := r.Constraint; c != nil && c.Done() {
		e.finish(st, bySeq, FinishStop, nil) // the grammar allows nothing at all: an empty output
		return
	}
	_, err := e.sched.AddRequest(SeqRequest{ID: st.seq, Prompt: r.Prompt, MaxTokens: r.MaxTokens,
		StopTokenIDs: stopIDs, Priority: r.Priority, ArrivalTime: int64(st.seq), CacheSalt: adapterSalt(r.CacheSalt, r.Adapter), Adapter: r.Adapter})
	if err != nil {
		e.finish(st, bySeq, FinishAbort, err)
		return
	}
	e.mu.Lock()
	e.stats.PromptTokens += int64(len(r.Prompt))
	e.mu.Unlock()
}

// step runs one scheduler step end to end.
func (e *Engine) step(bySeq map[SeqID]*reqState, samplerOf func(SeqID) *seqSampler) {
	t0 := e.now()
	rec := e.profiler.Load()
	var sched0, sched1 time.Time
	if rec != nil {
		sched0 = time.Now()
	}
	plan := e.sched.Schedule()
	if rec != nil {
		sched1 = time.Now()
	}
	m := StepMetrics{Step: plan.Step, NumSeqs: len(plan.Seqs), NumTokens: plan.NumBatchedTokens,
		Preempted: len(plan.Preempted), Start: t0, Plan: plan}
	started := 0
	for _, ss := range plan.Seqs {
		st := bySeq[ss.ID]
		if !st.started {
			st.started = true
			st.metrics.FirstScheduled = t0
			st.cached = e.sched.Sequence(ss.ID).NumCachedTokens
			started++
		}
		if ss.Prefill {
			m.PrefillTokens += len(ss.Tokens)
		} else {
			m.DecodeSeqs++
		}
		m.DraftTokens += ss.NumDrafts
	}
	for _, id := range plan.Preempted {
		bySeq[id].metrics.Preemptions++
		bySeq[id].hidden = bySeq[id].hidden[:0]
		e.forgetDraft(id)
	}
	// At once, not after the step: a request that finishes during the step must not leave
	// Add's count of started requests (len(live) - notStart) short.
	e.mu.Lock()
	e.notStart -= started
	e.mu.Unlock()
	e.runner.b.Recorder = rec
	res, err := e.runner.execute(plan, samplerOf)
	m.Forward, m.Sample, m.MaskWait = res.forward, res.sample, res.maskWait
	m.Constrained = len(e.runner.masks.jobs)
	if err != nil {
		// An engine error (not expected: requests are validated) fails this step's requests.
		for _, ss := range plan.Seqs {
			if st := bySeq[ss.ID]; st != nil && !st.finished {
				_ = e.sched.Abort(ss.ID)
				e.finish(st, bySeq, FinishAbort, err)
			}
		}
		res.sampled = nil
	}
	// A constraint that failed (rejected its token, panicked, allowed nothing) ends its own
	// request before Update, so the token is never appended.
	for id, cerr := range res.rejected {
		if st := bySeq[id]; st != nil && !st.finished {
			_ = e.sched.Abort(id)
			e.finish(st, bySeq, FinishAbort, fmt.Errorf("engine: request %s: %w", st.req.ID, cerr))
		}
	}
	outs, err := e.sched.UpdateTokens(plan, res.sampled)
	if err != nil {
		panic(err) // the runner samples every sequence that needs it: a bug
	}
	e.observeSpec(bySeq, outs)
	e.keepHidden(bySeq, res, outs)
	now := e.now()
	var loads map[int][]uint64
	if e.runner.m.Config.Experts > 0 {
		loads = e.runner.b.ExpertLoads()
	}
	// The step's counters are updated before any output is sent, so a client that has its
	// answer sees them (each sequence's generated tokens are added just before its send).
	e.mu.Lock()
	if loads != nil {
		e.stats.ExpertLoads = loads
	}
	e.stats.Steps++
	e.stats.BatchedTokens += int64(plan.NumBatchedTokens)
	e.stats.LastStepTokens = plan.NumBatchedTokens
	e.stats.PrefillTokens += int64(m.PrefillTokens)
	e.mu.Unlock()
	for _, o := range outs {
		generated := 0
		st := bySeq[o.ID]
		if st.metrics.FirstToken.IsZero() {
			st.metrics.FirstToken = now
		}
		st.metrics.LastToken = now
		var d Output
		reason := ""
		for i, tok := range o.Tokens { // one token, or a verification's accepted drafts and the next
			s := StatusRunning
			if i == len(o.Tokens)-1 {
				s = o.Status
			}
			generated++
			if reason = e.emit(st, &d, o.ID, tok, s, res.results[o.ID][i]); reason != "" {
				break
			}
		}
		done := res.done[o.ID] // after the forced tokens: void if they are cut
		toks := res.forced[o.ID]
		if len(toks) > 0 {
			done = false
		}
		if reason == "" && len(toks) > 0 {
			// Jump forward: the constraint has advanced past these; append them unsampled.
			n, status, err := e.sched.AppendForced(o.ID, toks)
			if err != nil {
				panic(err) // the sequence is running right after Update: a bug
			}
			for i, tok := range toks[:n] {
				s := StatusRunning
				if i == n-1 {
					s = status
				}
				st.dec.sampler.Accept(tok)
				generated++
				done = i == len(toks)-1 && res.done[o.ID]
				if reason = e.emit(st, &d, o.ID, tok, s, sample.Result{ID: tok}); reason != "" {
					break
				}
			}
		}
		if done && reason != FinishStop {
			// The constraint is complete: nothing may follow this token (kept, text included).
			if reason == "" {
				_ = e.sched.Finish(o.ID, StatusFinishedStopped)
			}
			reason = FinishStop
		}
		e.mu.Lock()
		e.stats.GenerationTokens += int64(generated)
		e.mu.Unlock()
		if reason == "" {
			st.send(e.fill(st, d), false)
			continue
		}
		e.finishWith(st, bySeq, reason, nil, d)
	}
	res.proposeStart = time.Now()
	m.Propose = e.propose(bySeq)
	res.propose = m.Propose
	m.Total = e.now().Sub(t0)
	if rec != nil {
		recordStep(rec, plan, sched0, sched1, res, time.Now())
	}
	if e.opts.OnStep != nil {
		m.KVUsage = e.sched.KVUsage()
		m.Running, m.Waiting = e.sched.NumRunning(), e.sched.NumWaiting()
		e.opts.OnStep(m)
	}
}

// emit adds generated token tok of sequence id (status: the scheduler's after it) to delta d:
// its id, its logprobs if asked, and the text it makes final. It returns the finish reason
// the token brings ("" while the sequence goes on); a stop string finishes the sequence.
func (e *Engine) emit(st *reqState, d *Output, id SeqID, tok int, status Status, lp sample.Result) string {
	st.nOut++
	d.TokenIDs = append(d.TokenIDs, tok)
	if st.req.Params.Logprobs || st.req.Params.TopLogprobs > 0 {
		d.Logprobs = append(d.Logprobs, lp)
	}
	reason := ""
	switch status {
	case StatusFinishedStopped:
		reason = FinishStop // a stop token id: no text for it
	case StatusFinishedLength:
		reason = FinishLength
	}
	if reason != FinishStop {
		text, stopped := st.stop.add(tok)
		d.Text += text
		if stopped {
			if reason == "" {
				_ = e.sched.Finish(id, StatusFinishedStopped)
			}
			reason = FinishStop
		}
	}
	return reason
}

// fill completes a delta with the request's counters and timestamps.
func (e *Engine) fill(st *reqState, d Output) Output {
	d.ID = st.req.ID
	d.PromptTokens = len(st.req.Prompt)
	d.OutputTokens = st.nOut
	d.CachedTokens = st.cached
	d.Metrics = st.metrics
	return d
}

// finish ends a request that the scheduler no longer holds, with no new token.
func (e *Engine) finish(st *reqState, bySeq map[SeqID]*reqState, reason string, err error) {
	e.finishWith(st, bySeq, reason, err, Output{})
}

// finishWith sends the final Output (d plus any held-back text) and forgets the request.
func (e *Engine) finishWith(st *reqState, bySeq map[SeqID]*reqState, reason string, err error, d Output) {
	if st.finished {
		return
	}
	st.finished = true
	if st.req.HoldKV {
		e.finishHold(st, reason) // before the final Output: its client asks for the export next
	}
	if reason != FinishAbort {
		text, stopped := st.stop.flush()
		d.Text += text
		if stopped {
			reason = FinishStop
		}
	}
	st.metrics.Finished = e.now()
	d.Finished, d.FinishReason, d.Err = true, reason, err
	if st.stopCtx != nil {
		st.stopCtx()
	}
	delete(bySeq, st.seq)
	e.forgetDraft(st.seq)
	e.mu.Lock() // counters first: a client that has its final Output sees them
	if !st.started {
		e.notStart--
	}
	delete(e.live, st.req.ID)
	if reason == FinishAbort {
		e.stats.Aborted++
	} else {
		e.stats.Finished++
	}
	e.mu.Unlock()
	st.send(e.fill(st, d), true)
}

// publish refreshes the Stats snapshot.
func (e *Engine) publish() {
	s := e.snapshot()
	e.mu.Lock()
	s.PromptTokens, s.PrefillTokens, s.GenerationTokens = e.stats.PromptTokens, e.stats.PrefillTokens, e.stats.GenerationTokens
	s.Steps, s.BatchedTokens, s.LastStepTokens = e.stats.Steps, e.stats.BatchedTokens, e.stats.LastStepTokens
	s.Finished, s.Aborted = e.stats.Finished, e.stats.Aborted
	s.Spec, s.ExpertLoads = e.specSnapshot(), e.stats.ExpertLoads
	e.stats = s
	e.mu.Unlock()
}

// snapshot reads the scheduler's side of Stats (step loop, or before it starts).
func (e *Engine) snapshot() Stats {
	bs := e.sched.Blocks()
	bst := bs.Stats()
	st := Stats{
		Running: e.sched.NumRunning(), Waiting: e.sched.NumWaiting(),
		NumBlocks: e.cfg.NumBlocks, FreeBlocks: bs.NumFreeBlocks(), KVUsage: e.sched.KVUsage(),
		PrefixQueryTokens: bst.QueryTokens, PrefixHitTokens: bst.HitTokens,
		Preemptions: e.sched.Stats().Preemptions,
	}
	for g := 1; g < e.sched.NumKVGroups(); g++ {
		m := e.sched.GroupBlocks(g)
		st.NumBlocks += m.NumBlocks()
		st.FreeBlocks += m.NumFreeBlocks()
	}
	return st
}
