// This file implements the engine's side of constrained decoding (Request.Constraint): each
// constrained sequence's token mask is filled on goroutines of its own, started before the
// step's forward pass and joined before sampling, so the grammar works while the kernel pool
// runs the model; the sampler then chooses only allowed tokens (sample.SampleMasked) and the
// constraint accepts the chosen one. A constraint that panics or rejects a token fails its own
// request, never the step or the process.

package engine

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/llmcloud/llmcloud/sample"
)

// seqSampler is what the runner needs to choose one sequence's next token.
type seqSampler struct {
	sampler    *sample.Sampler
	constraint Constraint // nil: unconstrained
	forcer     Forcer     // the constraint's jump forward, if it has one
	mask       []uint64   // the constraint's mask buffer, reused every step
	// probs are the proposer's distributions for this step's drafts (nil: point masses).
	probs [][]float32
}

// newSeqSampler pairs a request's sampler with its constraint and a mask buffer of words
// words (a mask covers the larger of the model's and the tokenizer's vocabularies).
func newSeqSampler(smp *sample.Sampler, c Constraint, words int) seqSampler {
	ss := seqSampler{sampler: smp, constraint: c}
	if c != nil {
		ss.mask = make([]uint64, words)
		ss.forcer, _ = c.(Forcer)
	}
	return ss
}

// fillMask asks the constraint for the allowed tokens. The buffer is cleared first, so words
// past the constraint's own vocabulary allow nothing. A panic becomes an error.
func (ss *seqSampler) fillMask() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("constraint: FillMask panicked: %v", p)
		}
	}()
	clear(ss.mask)
	ss.constraint.FillMask(ss.mask)
	return nil
}

// accept advances the constraint past tok, then past the tokens it forces next (returned), and
// reports whether it is now Done. A rejection or a panic becomes an error.
func (ss *seqSampler) accept(tok int) (forced []int, done bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("constraint: Accept(%d) panicked: %v", tok, p)
		}
	}()
	if err := ss.constraint.Accept(tok); err != nil {
		return nil, false, fmt.Errorf("constraint rejected token %d: %w", tok, err)
	}
	if ss.forcer != nil && !ss.constraint.Done() {
		forced = ss.forcer.Forced()
	}
	return forced, ss.constraint.Done(), nil
}

// maskFiller fills the masks of one step's constrained sequences on goroutines that run
// beside the forward pass. start and wait bracket the forward; the job list and the error
// slots are reused step after step.
type maskFiller struct {
	workers int           // goroutines per step at most (GOMAXPROCS by default)
	inline  bool          // fill in wait, after the forward (benchmarks compare)
	jobs    []*seqSampler // this step's constrained sequences
	slot    []int         // index of each job among the step's sampled rows
	errs    []error       // per job
	next    atomic.Int64
	wg      sync.WaitGroup
}

func newMaskFiller() *maskFiller { return &maskFiller{workers: runtime.GOMAXPROCS(0)} }

// reset forgets the previous step's jobs.
func (f *maskFiller) reset() { f.jobs, f.slot = f.jobs[:0], f.slot[:0] }

// add queues the mask of ss, the step's sampled row j.
func (f *maskFiller) add(ss *seqSampler, j int) {
	f.jobs = append(f.jobs, ss)
	f.slot = append(f.slot, j)
}

// start begins filling the queued masks in the background.
func (f *maskFiller) start() {
	f.errs = append(f.errs[:0], make([]error, len(f.jobs))...)
	if len(f.jobs) == 0 || f.inline {
		return
	}
	f.next.Store(0)
	n := min(max(f.workers, 1), len(f.jobs))
	f.wg.Add(n)
	for range n {
		go f.work()
	}
}

// work fills masks until none is left.
func (f *maskFiller) work() {
	defer f.wg.Done()
	for {
		i := int(f.next.Add(1) - 1)
		if i >= len(f.jobs) {
			return
		}
		f.errs[i] = f.jobs[i].fillMask()
	}
}

// wait returns once every queued mask is filled.
func (f *maskFiller) wait() {
	if f.inline {
		for i, ss := range f.jobs {
			f.errs[i] = ss.fillMask()
		}
		return
	}
	f.wg.Wait()
}
