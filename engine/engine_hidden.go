// This file implements the hidden states a HiddenProposer (a learned draft head) drafts from:
// when the Proposer asks for them, the runner's batch keeps the final-norm rows that produced
// the step's logits (model.Batch.KeepHidden), and after each step every sequence that got
// tokens keeps a copy of the row that produced its last one, passed as ProposeRequest.Hidden.
// A preempted sequence has none until its recompute's last chunk gives it one again.

package engine

// needsHidden reports whether p wants the target's hidden rows.
func needsHidden(p Proposer) bool {
	hp, ok := p.(HiddenProposer)
	return ok && hp.NeedsHidden()
}

// hiddenRows picks from the runner's batch, for each entry j that got tokens, the hidden row
// that produced its last token: the entry's row len(tokens)-1 (after its accepted drafts).
// The slices alias the batch and are valid until its next forward.
func (r *runner) hiddenRows(res *stepResult) {
	if !r.b.KeepHidden {
		return
	}
	h, D := r.b.Hidden(), r.m.Config.Dim
	res.hidden = map[SeqID][]float32{}
	for j, id := range r.ids {
		toks := res.sampled[id]
		if len(toks) == 0 {
			continue
		}
		row := r.rows[j] + len(toks) - 1
		if (row+1)*D <= len(h) {
			res.hidden[id] = h[row*D : (row+1)*D]
		}
	}
}

// keepHidden copies each output sequence's hidden row into its state for the next Propose.
func (e *Engine) keepHidden(bySeq map[SeqID]*reqState, res stepResult, outs []StepOutput) {
	if e.spec == nil || !e.spec.hidden {
		return
	}
	for _, o := range outs {
		if st := bySeq[o.ID]; st != nil {
			st.hidden = append(st.hidden[:0], res.hidden[o.ID]...)
		}
	}
}
