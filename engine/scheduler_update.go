// This file implements Update, the second half of a step: after the runner has executed a
// StepPlan, the scheduled tokens count as computed (their full blocks enter the prefix cache),
// sampled tokens are appended, and sequences that hit a stop id, their MaxTokens or the model
// length finish and free their blocks. A speculative entry (NumDrafts > 0) appends its
// accepted drafts and the token after them; only the last known token and the accepted drafts
// count as computed, and the blocks past the next token's slot are released (rollback).

package engine

import (
	"fmt"
	"slices"
)

// StepOutput is what one step produced for one sequence that needed logits.
type StepOutput struct {
	ID     SeqID
	Token  int    // the first appended token (the only one without drafts)
	Tokens []int  // every appended token, Token first (a stop id, MaxTokens or the length may cut them)
	Status Status // running, or the finished status it reached with its last token
	// Drafts is the entry's NumDrafts and Accepted how many of them the verification kept
	// (before any cut: what speculation's statistics count).
	Drafts, Accepted int
}

// Update applies the results of plan with one sampled token per sequence (no drafts
// scheduled); see UpdateTokens.
func (s *Scheduler) Update(plan *StepPlan, sampled map[SeqID]int) ([]StepOutput, error) {
	lists := make(map[SeqID][]int, len(sampled))
	for id, tok := range sampled {
		lists[id] = []int{tok}
	}
	return s.UpdateTokens(plan, lists)
}

// UpdateTokens applies the results of plan, which must be the plan Schedule last returned.
// sampled holds the tokens to append for every scheduled sequence with NeedsLogits that is
// still live (others are ignored; sequences aborted since Schedule are skipped): one token,
// or for an entry with NumDrafts its accepted drafts (a prefix of them) and one token more.
// On error nothing changes. The outputs are the scheduler's buffer, valid until the next
// Update.
func (s *Scheduler) UpdateTokens(plan *StepPlan, sampled map[SeqID][]int) ([]StepOutput, error) {
	return s.update(plan, func(i int) ([]int, bool) {
		toks, ok := sampled[plan.Seqs[i].ID]
		return toks, ok
	})
}

// UpdateEach is UpdateTokens with the sampled tokens given by plan entry: tokens(i) are
// plan.Seqs[i]'s (called only for live entries with NeedsLogits). It spares a caller that
// has them by entry (the simulator) building a map every step.
func (s *Scheduler) UpdateEach(plan *StepPlan, tokens func(i int) []int) ([]StepOutput, error) {
	return s.update(plan, func(i int) ([]int, bool) {
		toks := tokens(i)
		return toks, toks != nil
	})
}

func (s *Scheduler) update(plan *StepPlan, sampled func(i int) ([]int, bool)) ([]StepOutput, error) {
	if plan == nil || plan != s.pending {
		return nil, fmt.Errorf("engine: Update with a plan that is not the pending one")
	}
	// s.planSeqs[i] is the sequence plan.Seqs[i] runs; one aborted (finished) since Schedule
	// is skipped.
	for i, ss := range plan.Seqs {
		if s.planSeqs[i].Status != StatusRunning || !ss.NeedsLogits {
			continue
		}
		toks, ok := sampled(i)
		switch {
		case !ok || len(toks) == 0:
			return nil, fmt.Errorf("engine: Update: no sampled token for sequence %d", ss.ID)
		case len(toks) > ss.NumDrafts+1:
			return nil, fmt.Errorf("engine: Update: %d tokens for sequence %d with %d drafts", len(toks), ss.ID, ss.NumDrafts)
		case ss.NumDrafts > 0 && !slices.Equal(toks[:len(toks)-1], ss.Tokens[1:len(toks)]):
			return nil, fmt.Errorf("engine: Update: sequence %d: accepted tokens %v are not its drafts %v", ss.ID, toks[:len(toks)-1], ss.Tokens[1:])
		}
	}
	s.pending = nil
	out, bs := s.outBuf[:0], s.cfg.BlockSizeTokens
	for i, ss := range plan.Seqs {
		seq := s.planSeqs[i]
		if seq.Status != StatusRunning {
			continue // aborted or finished since Schedule
		}
		if ss.NumDrafts > 0 {
			toks, _ := sampled(i)
			out = append(out, s.updateSpec(seq, ss, toks))
			continue
		}
		seq.NumComputedTokens = ss.StartPos + len(ss.Tokens)
		if s.cfg.PrefixCaching && seq.NumComputedTokens/bs > ss.StartPos/bs {
			// Only a step that fills a block has anything to commit (the blocks before
			// StartPos were committed by earlier steps or came from the cache): most decode
			// steps skip the block table lookup.
			s.commit(seq.ID, seq.tokens, seq.NumComputedTokens)
		}
		s.releaseWindows(seq)
		if !ss.NeedsLogits {
			continue
		}
		toks, _ := sampled(i)
		toks = toks[:1]
		out = append(out, StepOutput{ID: seq.ID, Token: toks[0], Tokens: toks, Status: s.appendOutput(seq, toks[0])})
	}
	s.outBuf = out
	return out, nil
}

// updateSpec applies a verified speculative entry: toks are the accepted drafts and the
// target's next token.
func (s *Scheduler) updateSpec(seq *Sequence, ss ScheduledSeq, toks []int) StepOutput {
	o := StepOutput{ID: seq.ID, Token: toks[0], Status: StatusRunning, Drafts: ss.NumDrafts, Accepted: len(toks) - 1}
	n := 0
	for _, tok := range toks {
		seq.appendToken(tok)
		n++
		if o.Status = s.outputStatus(seq, tok); o.Status != StatusRunning {
			break
		}
	}
	o.Tokens = toks[:n]
	// Rows StartPos..StartPos+Accepted hold the last known token and the accepted drafts.
	computed := min(ss.StartPos+len(toks), seq.NumTokens())
	s.commit(seq.ID, seq.tokens, computed)
	if o.Status != StatusRunning {
		s.finish(seq, o.Status)
		return o
	}
	seq.NumComputedTokens = computed
	s.truncate(seq.ID, seq.NumTokens()) // keep the next token's slot, release the rejected rest
	s.releaseWindows(seq)
	return o
}

// appendOutput adds one output token (sampled or forced) to seq and finishes seq when the token
// is a stop id or reaches max_tokens or the maximum model length; it returns seq's status.
func (s *Scheduler) appendOutput(seq *Sequence, tok int) Status {
	seq.appendToken(tok)
	status := s.outputStatus(seq, tok)
	if status != StatusRunning {
		s.finish(seq, status)
	}
	return status
}

// outputStatus is seq's status after its just appended output token tok.
func (s *Scheduler) outputStatus(seq *Sequence, tok int) Status {
	switch {
	case slices.Contains(seq.StopTokenIDs, tok):
		return StatusFinishedStopped
	case seq.MaxTokens > 0 && seq.NumOutputTokens() >= seq.MaxTokens,
		seq.NumTokens() >= s.cfg.MaxModelLenTokens:
		return StatusFinishedLength
	}
	return StatusRunning
}
