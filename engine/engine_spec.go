// This file implements the step loop's half of speculative decoding (Options.Speculative).
// After each step's outputs, every running sequence in decode that is not constrained gets a
// ProposeRequest, the Proposer is called once for all of them, and the drafts go to the
// scheduler (SetDraft) to be verified in the next step's forward. Verification outcomes feed
// SpecStats and each sequence's adaptive k:
//
//	p = (A + 1) / (A + R + 1), A and R decaying sums (x0.8 per verification) of accepted
//	draft tokens and of rejections (a verification that rejected a draft adds 1 to R);
//	k = the largest k in [1, NumTokens] with p^k >= 0.1 (the last draft still has a 10%
//	chance of being used); a new sequence starts at k = NumTokens. While p < 0.25 after a
//	verification, the sequence sits out 1, 2, 4 ... 16 steps (no Propose for it) before
//	the next try; a verification with p >= 0.25 ends the back-off.
//
// A step with DisableByBatchSize or more running sequences proposes nothing: a batch that
// large keeps the cores busy, and draft rows would only add work.

package engine

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// DefaultDisableByBatchSize is SpecOptions.DisableByBatchSize's value when it is 0: on a CPU
// a decode batch of 8 already makes the matmuls compute-bound, where verifying draft rows
// costs about as much as decoding them (docs/engine.md, "Speculative decoding").
const DefaultDisableByBatchSize = 8

// MaxSpecTokens bounds SpecOptions.NumTokens.
const MaxSpecTokens = 32

const (
	specDecay   = 0.8 // weight of a sequence's past verifications per new one
	specMinGain = 0.1 // the least chance of acceptance worth a draft position
	// A sequence whose p falls below specMinP sits out 1, 2, 4 ... up to specMaxBackoff steps
	// before its next draft: a verification row costs about a decode row (docs/engine.md).
	specMinP       = 0.25
	specMaxBackoff = 16
)

// specEngine is the engine's speculative decoding state (step loop only, stats under e.mu).
type specEngine struct {
	opts      SpecOptions
	disableAt int  // 0: never
	hidden    bool // the Proposer wants the target's hidden rows (engine_hidden.go)
	reqs      []ProposeRequest
	stats     SpecStats // under Engine.mu
}

// newSpecEngine validates o; nil when speculation is off.
func newSpecEngine(o SpecOptions, cfg Config) (*specEngine, error) {
	if o.Proposer == nil {
		if o.NumTokens != 0 {
			return nil, fmt.Errorf("engine: Speculative.NumTokens %d without a Proposer", o.NumTokens)
		}
		return nil, nil
	}
	switch {
	case o.NumTokens < 1 || o.NumTokens > MaxSpecTokens:
		return nil, fmt.Errorf("engine: Speculative.NumTokens %d out of range [1, %d]", o.NumTokens, MaxSpecTokens)
	case o.NumTokens >= cfg.MaxNumBatchedTokens:
		return nil, fmt.Errorf("engine: Speculative.NumTokens %d must be below the step budget MaxNumBatchedTokens %d", o.NumTokens, cfg.MaxNumBatchedTokens)
	}
	sp := &specEngine{opts: o, disableAt: o.DisableByBatchSize, hidden: needsHidden(o.Proposer)}
	switch {
	case sp.disableAt == 0:
		sp.disableAt = DefaultDisableByBatchSize
	case sp.disableAt < 0:
		sp.disableAt = 0
	}
	sp.stats.AcceptedPerPos = make([]int64, o.NumTokens)
	return sp, nil
}

// specSeq is one sequence's recent acceptance, and its back-off.
type specSeq struct {
	accepted, rejections float64
	skip, backoff        int // steps left without drafts; the length of the last pause
}

func (s *specSeq) observe(accepted, drafts int) {
	s.accepted = specDecay*s.accepted + float64(accepted)
	s.rejections *= specDecay
	if accepted < drafts {
		s.rejections++
	}
	if s.p() >= specMinP {
		s.backoff = 0
		return
	}
	s.backoff = min(max(2*s.backoff, 1), specMaxBackoff)
	s.skip = s.backoff
}

// p estimates the chance that the next draft token is accepted.
func (s *specSeq) p() float64 { return (s.accepted + 1) / (s.accepted + s.rejections + 1) }

// paused reports (and counts down) a step the sequence sits out.
func (s *specSeq) paused() bool {
	if s.skip > 0 {
		s.skip--
		return true
	}
	return false
}

// k is the number of drafts to ask for, in [1, maxK].
func (s *specSeq) k(maxK int) int {
	p := s.p()
	if p >= 1 {
		return maxK
	}
	k := math.Floor(math.Log(specMinGain) / math.Log(p))
	return int(min(max(k, 1), float64(maxK)))
}

// propose asks the Proposer for the next step's drafts and returns how long it took.
func (e *Engine) propose(bySeq map[SeqID]*reqState) time.Duration {
	sp := e.spec
	if sp == nil || (sp.disableAt > 0 && e.sched.NumRunning() >= sp.disableAt) {
		return 0
	}
	reqs := sp.reqs[:0]
	for _, seq := range e.sched.running {
		st := bySeq[seq.ID]
		if st == nil || st.finished || st.req.Constraint != nil || seq.NumComputedTokens != seq.NumTokens()-1 || st.spec.paused() {
			continue
		}
		room := e.sched.roomForDrafts(seq)
		if room <= 0 {
			continue
		}
		var buf []int
		if i := len(reqs); i < cap(reqs) {
			buf = reqs[:i+1][i].Draft[:0] // reuse the slot's buffer (SetDraft copies)
		}
		var hidden []float32
		if len(st.hidden) > 0 {
			hidden = st.hidden
		}
		reqs = append(reqs, ProposeRequest{ID: seq.ID, Tokens: seq.tokens, K: min(st.spec.k(sp.opts.NumTokens), room),
			Params: &st.req.Params, Hidden: hidden, Draft: buf})
	}
	sp.reqs = reqs
	if len(reqs) == 0 {
		return 0
	}
	t0 := time.Now()
	err := callPropose(sp.opts.Proposer, reqs)
	took := time.Since(t0)
	if err != nil {
		return took // the next step runs without drafts
	}
	for i := range reqs {
		r := &reqs[i]
		d := r.Draft[:min(len(r.Draft), r.K)]
		if r.Probs != nil {
			d = d[:min(len(d), len(r.Probs))]
		}
		for j, tok := range d { // a token outside the vocabulary would fail the whole forward
			if tok < 0 || tok >= e.m.Config.Vocab {
				d = d[:j]
				break
			}
		}
		n, err := e.sched.SetDraft(r.ID, d)
		if err != nil {
			panic(err) // the sequence is running between Update and Schedule: a bug
		}
		st := bySeq[r.ID]
		st.dec.probs = nil
		if r.Probs != nil {
			st.dec.probs = r.Probs[:n]
		}
		r.Tokens, r.Params, r.Probs, r.Hidden = nil, nil, nil, nil
	}
	return took
}

// callPropose calls p.Propose; a panic becomes an error (a proposer's bug costs its drafts,
// not the engine).
func callPropose(p Proposer, reqs []ProposeRequest) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("engine: Propose panicked: %v", v)
		}
	}()
	return p.Propose(reqs)
}

// observeSpec counts the step's verifications in SpecStats (published at once, before any
// output is sent, like the other step counters) and in each sequence's acceptance.
func (e *Engine) observeSpec(bySeq map[SeqID]*reqState, outs []StepOutput) {
	if e.spec == nil {
		return
	}
	s := &e.spec.stats
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, o := range outs {
		if o.Drafts == 0 {
			continue
		}
		n++
		bySeq[o.ID].spec.observe(o.Accepted, o.Drafts)
		s.Drafts++
		s.DraftTokens += int64(o.Drafts)
		s.AcceptedTokens += int64(o.Accepted)
		for i := range o.Accepted {
			s.AcceptedPerPos[i]++
		}
	}
	if n > 0 {
		e.stats.Spec = e.specSnapshot()
	}
}

// forgetDraft tells the Proposer that a sequence finished or was preempted.
func (e *Engine) forgetDraft(id SeqID) {
	if e.spec != nil {
		e.spec.opts.Proposer.Forget(id)
	}
}

// specSnapshot copies SpecStats for Stats (under e.mu).
func (e *Engine) specSnapshot() SpecStats {
	if e.spec == nil {
		return SpecStats{}
	}
	s := e.spec.stats
	s.AcceptedPerPos = slices.Clone(s.AcceptedPerPos)
	return s
}
