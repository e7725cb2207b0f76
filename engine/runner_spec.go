// This file implements the runner's half of speculative decoding: a speculative entry (the
// last known token and its drafts, ScheduledSeq.NumDrafts) gets the logits of all its rows
// (model.BatchSeq.NumLogits), and its sampler's Verify keeps the drafts the target agrees with
// (greedy match, or rejection sampling against the proposer's distributions) and picks the
// token after them. Constrained requests never speculate (the engine gives them no drafts):
// a grammar's mask would have to be computed for every draft position before the forward.

package engine

import "github.com/llmcloud/llmcloud/sample"

// verify checks entry j's drafts against its rows of logits. If the sampler cannot verify
// them (a malformed draft distribution, or a sampling mode Verify does not support) the
// drafts are all rejected and the first row is sampled as in a plain decode, which is what
// the target alone would have done.
func (r *runner) verify(j int) ([]sample.Result, error) {
	V := r.m.Config.Vocab
	smp := r.samplers[j]
	drafts := r.drafts[j]
	k := len(drafts)
	rows := r.logits[r.rows[j]*V : (r.rows[j]+k+1)*V]
	q := smp.probs
	if q != nil {
		q = q[:min(k, len(q))]
	}
	out, err := smp.sampler.Verify(rows, V, drafts, q)
	if err == nil {
		return out, nil
	}
	if len(out) > 0 {
		return nil, err // it failed midway: its history already holds tokens
	}
	res, err := smp.sampler.Sample(rows[:V])
	if err != nil {
		return nil, err
	}
	return []sample.Result{res}, nil
}

// verifiedTokens splits a verification's results into token ids and results.
func verifiedTokens(rs []sample.Result) ([]int, []sample.Result) {
	ids := make([]int, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids, rs
}
