// This file implements the scheduler's invariant check, used by the tests after every event:
// the block manager's invariants; every live sequence is in exactly one queue matching its
// status; running sequences hold blocks covering their computed tokens, waiting ones hold none;
// drafts only on running sequences in decode, within MaxTokens and the model length;
// the running count respects MaxNumSeqs.

package engine

import "fmt"

func (s *Scheduler) check() error {
	if err := s.blocks.check(); err != nil {
		return err
	}
	if len(s.running) > s.cfg.MaxNumSeqs {
		return fmt.Errorf("%d running > MaxNumSeqs %d", len(s.running), s.cfg.MaxNumSeqs)
	}
	if len(s.running)+len(s.waiting) != len(s.seqs) {
		return fmt.Errorf("%d running + %d waiting != %d live", len(s.running), len(s.waiting), len(s.seqs))
	}
	if len(s.blocks.tables) != len(s.running) {
		return fmt.Errorf("%d block tables for %d running sequences", len(s.blocks.tables), len(s.running))
	}
	for _, q := range s.running {
		if s.seqs[q.ID] != q || q.Status != StatusRunning {
			return fmt.Errorf("running seq %d: status %v", q.ID, q.Status)
		}
		t := s.blocks.tables[q.ID]
		if t == nil || len(t.blocks)*s.cfg.BlockSizeTokens < q.NumComputedTokens {
			return fmt.Errorf("running seq %d: blocks do not cover %d computed tokens", q.ID, q.NumComputedTokens)
		}
		if len(q.draft) > 0 && (q.NumComputedTokens != q.NumTokens()-1 || len(q.draft) > s.roomForDrafts(q)) {
			return fmt.Errorf("running seq %d: %d drafts at %d of %d tokens", q.ID, len(q.draft), q.NumComputedTokens, q.NumTokens())
		}
		if q.NumComputedTokens >= q.NumTokens() && s.pending == nil {
			return fmt.Errorf("running seq %d: nothing left to compute (%d of %d)", q.ID, q.NumComputedTokens, q.NumTokens())
		}
	}
	for _, q := range s.waiting {
		if s.seqs[q.ID] != q || (q.Status != StatusWaiting && q.Status != StatusPreempted) {
			return fmt.Errorf("waiting seq %d: status %v", q.ID, q.Status)
		}
		if s.blocks.tables[q.ID] != nil || q.NumComputedTokens != 0 || len(q.draft) != 0 {
			return fmt.Errorf("waiting seq %d holds blocks, computed tokens or drafts", q.ID)
		}
	}
	return nil
}
