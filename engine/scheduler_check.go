// This file implements the scheduler's invariant check, used by the tests after every event:
// every KV group's block manager's invariants (and no block released inside a window, every
// computed full block committed); every live sequence is in exactly one queue matching its
// status; running sequences hold blocks covering their computed tokens, waiting ones hold none;
// drafts only on running sequences in decode, within MaxTokens and the model length;
// the running count respects MaxNumSeqs.

package engine

import "fmt"

func (s *Scheduler) check() error {
	for g, m := range s.groups {
		if err := m.check(); err != nil {
			return fmt.Errorf("KV group %d: %w", g, err)
		}
		if len(m.tables) != len(s.running) {
			return fmt.Errorf("KV group %d: %d block tables for %d running sequences", g, len(m.tables), len(s.running))
		}
		for _, q := range s.running {
			t := m.tables[q.ID]
			if t == nil || len(t.blocks)*s.cfg.BlockSizeTokens < q.NumComputedTokens {
				return fmt.Errorf("KV group %d: running seq %d: blocks do not cover %d computed tokens", g, q.ID, q.NumComputedTokens)
			}
			// Update commits only at a block boundary (scheduler_update.go): that is right
			// because every computed full block is always committed.
			if s.cfg.PrefixCaching && len(t.hashes) != min(q.NumComputedTokens/s.cfg.BlockSizeTokens, len(t.blocks)) {
				return fmt.Errorf("KV group %d: running seq %d: %d blocks committed, %d computed tokens", g, q.ID, len(t.hashes), q.NumComputedTokens)
			}
			if g < len(s.cfg.KVGroups) && t.released > 0 && t.released*s.cfg.BlockSizeTokens > q.NumComputedTokens-s.cfg.KVGroups[g].Window+1 {
				return fmt.Errorf("KV group %d: running seq %d released %d blocks inside its window", g, q.ID, t.released)
			}
		}
		for _, q := range s.waiting {
			if m.tables[q.ID] != nil {
				return fmt.Errorf("KV group %d: waiting seq %d holds blocks", g, q.ID)
			}
		}
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

// checkEmpty is check plus: every block of every KV group is free (no leaks).
func (s *Scheduler) checkEmpty() error {
	if err := s.check(); err != nil {
		return err
	}
	for g, m := range s.groups {
		if err := m.checkEmpty(); err != nil {
			return fmt.Errorf("KV group %d: %w", g, err)
		}
	}
	return nil
}
