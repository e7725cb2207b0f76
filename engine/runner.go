// This file implements the runner: it executes one StepPlan on the model — the plan's entries
// become one ragged batch for model.ForwardBatch over the paged KV pool — and samples the next
// token of every sequence that needs logits, with that request's own sampler (in parallel
// across the kernel pool: samplers are independent), or verifies its drafts (runner_spec.go). Constrained sequences' masks are filled
// during the forward (constraint.go) and applied by the sampler; the constraint then accepts
// the sampled token.

package engine

import (
	"fmt"
	"time"

	"github.com/llmcloud/llmcloud/graph/exec"
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
	groupT [][][]int32 // per entry, its tables of KV groups 1..

	// per step, for the entries that need logits
	ids      []SeqID
	samplers []*seqSampler
	rows     []int   // the entry's first logits row
	drafts   [][]int // a speculative entry's draft tokens (runner_spec.go), else nil
	results  []sample.Result
	verified [][]sample.Result // a speculative entry's tokens
	errs     []error           // sampling errors (a constrained row: its constraint's failure)
	done     []bool            // the row's constraint is Done after its token (and forced ones)
	forced   [][]int           // tokens the row's constraint forces after its token
	logits   []float32
	sampleFn func(lo, hi int)
	masks    *maskFiller
}

func newRunner(m *model.Model, kv *model.PagedKV, invariant bool, adapters exec.Adapters) *runner {
	r := &runner{m: m, kv: kv, masks: newMaskFiller()}
	r.b.Invariant = invariant
	r.b.LoRA = adapters
	r.sampleFn = r.sample
	return r
}

// stepResult is what executing a plan produced.
type stepResult struct {
	sampled  map[SeqID][]int           // the tokens to append (one, or a verification's)
	results  map[SeqID][]sample.Result // their sampling results (logprobs)
	rejected map[SeqID]error           // constrained sequences whose constraint failed: abort them
	done     map[SeqID]bool            // constrained sequences whose constraint is Done
	forced   map[SeqID][]int           // tokens to append after the sampled one (Forcer)
	forward  time.Duration
	maskWait time.Duration // after the forward, waiting for masks still being filled
	sample   time.Duration
	start    time.Time // of the forward (the step's profile, profile.go)

	hidden       map[SeqID][]float32 // the hidden row of each sequence's last token (engine_hidden.go)
	proposeStart time.Time           // the Proposer's call after the step (engine_spec.go)
	propose      time.Duration
}

// execute runs plan. samplerOf returns the sampler of a scheduled sequence.
func (r *runner) execute(plan *StepPlan, samplerOf func(SeqID) *seqSampler) (stepResult, error) {
	res := stepResult{sampled: map[SeqID][]int{}, results: map[SeqID][]sample.Result{}}
	if len(plan.Seqs) == 0 {
		return res, nil
	}
	r.seqs = r.seqs[:0]
	r.ids, r.samplers, r.rows, r.drafts = r.ids[:0], r.samplers[:0], r.rows[:0], r.drafts[:0]
	rows := 0
	r.masks.reset()
	for len(r.tables) < len(plan.Seqs) {
		r.tables = append(r.tables, nil)
	}
	for i, ss := range plan.Seqs {
		t := r.tables[i][:0]
		for _, b := range ss.BlockTable {
			t = append(t, int32(b))
		}
		r.tables[i] = t
		bs := model.BatchSeq{Tokens: ss.Tokens, StartPos: ss.StartPos, BlockTable: t, NeedsLogits: ss.NeedsLogits, Adapter: ss.Adapter}
		if ss.GroupTables != nil {
			bs.GroupTables = r.groupTables(i, ss.GroupTables)
		}
		var drafts []int
		if ss.NumDrafts > 0 {
			bs.NumLogits = ss.NumDrafts + 1
			drafts = ss.Tokens[len(ss.Tokens)-ss.NumDrafts:]
		}
		r.seqs = append(r.seqs, bs)
		if ss.NeedsLogits {
			smp := samplerOf(ss.ID)
			if smp.constraint != nil {
				r.masks.add(smp, len(r.ids))
			}
			r.ids = append(r.ids, ss.ID)
			r.samplers = append(r.samplers, smp)
			r.rows = append(r.rows, rows)
			r.drafts = append(r.drafts, drafts)
			rows += max(bs.NumLogits, 1)
		}
	}
	n := len(r.ids)
	r.results = append(r.results[:0], make([]sample.Result, n)...)
	r.verified = append(r.verified[:0], make([][]sample.Result, n)...)
	r.errs = append(r.errs[:0], make([]error, n)...)
	r.done = append(r.done[:0], make([]bool, n)...)
	r.forced = append(r.forced[:0], make([][]int, n)...)
	t0 := time.Now()
	res.start = t0
	r.masks.start()
	logits, err := r.m.ForwardBatch(&r.b, r.kv, r.seqs)
	res.forward = time.Since(t0)
	r.masks.wait()
	t1 := time.Now()
	res.maskWait = t1.Sub(t0) - res.forward
	if err != nil {
		return res, err
	}
	for i, j := range r.masks.slot {
		r.errs[j] = r.masks.errs[i]
	}
	r.logits = logits
	p := r.m.Pool
	if p == nil {
		p = kernels.Default
	}
	if rows*r.m.Config.Vocab < 1<<16 {
		r.sample(0, n)
	} else {
		p.For(n, 1, r.sampleFn)
	}
	r.logits = nil
	res.sample = time.Since(t1)
	one := make([]int, n)
	for j, id := range r.ids {
		if r.errs[j] != nil {
			if r.samplers[j].constraint == nil {
				return res, fmt.Errorf("engine: sampling sequence %d: %w", id, r.errs[j])
			}
			if res.rejected == nil {
				res.rejected = map[SeqID]error{}
			}
			res.rejected[id] = r.errs[j]
			continue
		}
		if r.drafts[j] != nil {
			res.sampled[id], res.results[id] = verifiedTokens(r.verified[j])
		} else {
			one[j] = r.results[j].ID // valid for this step, like r.results
			res.sampled[id], res.results[id] = one[j:j+1:j+1], r.results[j:j+1:j+1]
		}
		if r.done[j] {
			if res.done == nil {
				res.done = map[SeqID]bool{}
			}
			res.done[id] = true
		}
		if len(r.forced[j]) > 0 {
			if res.forced == nil {
				res.forced = map[SeqID][]int{}
			}
			res.forced[id] = r.forced[j]
		}
	}
	r.hiddenRows(&res)
	return res, nil
}

// sample runs the samplers of logits rows [lo, hi); a constrained row samples under its mask
// and its constraint accepts the token.
func (r *runner) sample(lo, hi int) {
	V := r.m.Config.Vocab
	for j := lo; j < hi; j++ {
		smp := r.samplers[j]
		row := r.logits[r.rows[j]*V : (r.rows[j]+1)*V]
		if r.drafts[j] != nil {
			r.verified[j], r.errs[j] = r.verify(j)
			continue
		}
		if smp.constraint == nil {
			r.results[j], r.errs[j] = smp.sampler.Sample(row)
			continue
		}
		if r.errs[j] != nil {
			continue // its mask failed
		}
		r.results[j], r.errs[j] = smp.sampler.SampleMasked(row, smp.mask)
		if r.errs[j] == nil {
			r.forced[j], r.done[j], r.errs[j] = smp.accept(r.results[j].ID)
		}
	}
}

// groupTables converts entry i's tables of KV groups 1.. into r's reused buffers.
func (r *runner) groupTables(i int, tabs [][]BlockID) [][]int32 {
	for len(r.groupT) <= i {
		r.groupT = append(r.groupT, nil)
	}
	gt := r.groupT[i]
	for len(gt) < len(tabs) {
		gt = append(gt, nil)
	}
	gt = gt[:len(tabs)]
	for g, tab := range tabs {
		t := gt[g][:0]
		for _, b := range tab {
			t = append(t, int32(b))
		}
		gt[g] = t
	}
	r.groupT[i] = gt
	return gt
}
