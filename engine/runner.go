// This file implements the runner: it executes one StepPlan on the model — the plan's entries
// become one ragged batch for model.ForwardBatch over the paged KV pool — and samples the next
// token of every sequence that needs logits, with that request's own sampler (in parallel
// across the kernel pool: samplers are independent).

package engine

import (
	"fmt"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
)

type runner struct {
	m      *model.Model
	kv     *model.PagedKV
	b      model.Batch
	seqs   []model.BatchSeq
	tables [][]int32

	// per step, for the entries that need logits
	ids      []SeqID
	samplers []*sample.Sampler
	results  []sample.Result
	errs     []error
	logits   []float32
	sampleFn func(lo, hi int)
}

func newRunner(m *model.Model, kv *model.PagedKV, invariant bool) *runner {
	r := &runner{m: m, kv: kv}
	r.b.Invariant = invariant
	r.sampleFn = r.sample
	return r
}

// stepResult is what executing a plan produced.
type stepResult struct {
	sampled map[SeqID]int
	results map[SeqID]sample.Result
	forward time.Duration
	sample  time.Duration
}

// execute runs plan. samplerOf returns the sampler of a scheduled sequence.
func (r *runner) execute(plan *StepPlan, samplerOf func(SeqID) *sample.Sampler) (stepResult, error) {
	res := stepResult{sampled: map[SeqID]int{}, results: map[SeqID]sample.Result{}}
	if len(plan.Seqs) == 0 {
		return res, nil
	}
	r.seqs = r.seqs[:0]
	r.ids, r.samplers = r.ids[:0], r.samplers[:0]
	for len(r.tables) < len(plan.Seqs) {
		r.tables = append(r.tables, nil)
	}
	for i, ss := range plan.Seqs {
		t := r.tables[i][:0]
		for _, b := range ss.BlockTable {
			t = append(t, int32(b))
		}
		r.tables[i] = t
		r.seqs = append(r.seqs, model.BatchSeq{Tokens: ss.Tokens, StartPos: ss.StartPos, BlockTable: t, NeedsLogits: ss.NeedsLogits})
		if ss.NeedsLogits {
			r.ids = append(r.ids, ss.ID)
			r.samplers = append(r.samplers, samplerOf(ss.ID))
		}
	}
	t0 := time.Now()
	logits, err := r.m.ForwardBatch(&r.b, r.kv, r.seqs)
	res.forward = time.Since(t0)
	if err != nil {
		return res, err
	}
	t1 := time.Now()
	n := len(r.ids)
	r.logits = logits
	r.results = append(r.results[:0], make([]sample.Result, n)...)
	r.errs = append(r.errs[:0], make([]error, n)...)
	p := r.m.Pool
	if p == nil {
		p = kernels.Default
	}
	if n*r.m.Config.Vocab < 1<<16 {
		r.sample(0, n)
	} else {
		p.For(n, 1, r.sampleFn)
	}
	r.logits = nil
	res.sample = time.Since(t1)
	for j, id := range r.ids {
		if r.errs[j] != nil {
			return res, fmt.Errorf("engine: sampling sequence %d: %w", id, r.errs[j])
		}
		res.sampled[id] = r.results[j].ID
		res.results[id] = r.results[j]
	}
	return res, nil
}

// sample runs the samplers of logits rows [lo, hi).
func (r *runner) sample(lo, hi int) {
	V := r.m.Config.Vocab
	for j := lo; j < hi; j++ {
		r.results[j], r.errs[j] = r.samplers[j].Sample(r.logits[j*V : (j+1)*V])
	}
}
