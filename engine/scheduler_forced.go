// This file implements AppendForced: tokens a constraint forces after a sampled token (jump
// forward) are appended to the sequence between Update and the next Schedule without being
// sampled. They are not computed yet, so the next Schedule runs them together with their
// predecessor like a prompt chunk (NumTokens-NumComputedTokens > 1), and only the last row's
// logits are sampled: N forced tokens cost one forward step instead of N.

package engine

import "fmt"

// AppendForced appends toks to the output of running sequence id, stopping early at a stop
// token id, MaxTokens or the maximum model length (then the sequence finishes, as in Update).
// It returns how many tokens were appended and the sequence's status after them. Call it after
// Update (which left the sequence running, so there is room for at least one token) and before
// the next Schedule.
func (s *Scheduler) AppendForced(id SeqID, toks []int) (int, Status, error) {
	if s.pending != nil {
		return 0, 0, fmt.Errorf("engine: AppendForced while a plan is pending")
	}
	seq := s.seqs[id]
	if seq == nil || seq.Status != StatusRunning {
		return 0, 0, fmt.Errorf("engine: AppendForced: sequence %d is not running", id)
	}
	for i, tok := range toks {
		if status := s.appendOutput(seq, tok); status != StatusRunning {
			return i + 1, status, nil
		}
	}
	return len(toks), StatusRunning, nil
}
