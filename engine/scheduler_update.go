// This file implements Update, the second half of a step: after the runner has executed a
// StepPlan, the scheduled tokens count as computed (their full blocks enter the prefix cache),
// sampled tokens are appended, and sequences that hit a stop id, their MaxTokens or the model
// length finish and free their blocks.

package engine

import (
	"fmt"
	"slices"
)

// StepOutput is what one step produced for one sequence that needed logits.
type StepOutput struct {
	ID     SeqID
	Token  int    // the sampled token, appended to the output
	Status Status // running, or the finished status it reached with this token
}

// Update applies the results of plan, which must be the plan Schedule last returned. sampled
// holds a token for every scheduled sequence with NeedsLogits that is still live (others are
// ignored; sequences aborted since Schedule are skipped). On error nothing changes.
func (s *Scheduler) Update(plan *StepPlan, sampled map[SeqID]int) ([]StepOutput, error) {
	if plan == nil || plan != s.pending {
		return nil, fmt.Errorf("engine: Update with a plan that is not the pending one")
	}
	for _, ss := range plan.Seqs {
		if s.seqs[ss.ID] == nil || !ss.NeedsLogits {
			continue
		}
		if _, ok := sampled[ss.ID]; !ok {
			return nil, fmt.Errorf("engine: Update: no sampled token for sequence %d", ss.ID)
		}
	}
	s.pending = nil
	var out []StepOutput
	for _, ss := range plan.Seqs {
		seq := s.seqs[ss.ID]
		if seq == nil || seq.Status != StatusRunning {
			continue // aborted or finished since Schedule
		}
		seq.NumComputedTokens = ss.StartPos + len(ss.Tokens)
		s.blocks.Commit(seq.ID, seq.tokens, seq.NumComputedTokens)
		if !ss.NeedsLogits {
			continue
		}
		tok := sampled[ss.ID]
		out = append(out, StepOutput{ID: seq.ID, Token: tok, Status: s.appendOutput(seq, tok)})
	}
	return out, nil
}

// appendOutput adds one output token (sampled or forced) to seq and finishes seq when the token
// is a stop id or reaches max_tokens or the maximum model length; it returns seq's status.
func (s *Scheduler) appendOutput(seq *Sequence, tok int) Status {
	seq.appendToken(tok)
	status := StatusRunning
	switch {
	case slices.Contains(seq.StopTokenIDs, tok):
		status = StatusFinishedStopped
	case seq.MaxTokens > 0 && seq.NumOutputTokens() >= seq.MaxTokens,
		seq.NumTokens() >= s.cfg.MaxModelLenTokens:
		status = StatusFinishedLength
	}
	if status != StatusRunning {
		s.finish(seq, status)
	}
	return status
}
