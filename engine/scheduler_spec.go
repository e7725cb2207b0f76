// This file implements the scheduler's half of speculative decoding. Between Update and
// Schedule the engine gives a running sequence in decode draft tokens (SetDraft); Schedule
// runs the sequence's last known token and the drafts as one chunk (ScheduledSeq.NumDrafts),
// cutting them to the step budget (every later running sequence keeps a token of it) and to
// the free blocks (drafts never preempt anyone); Update (scheduler_update.go) appends the
// verified tokens and rolls the KV back past the last accepted one. Drafts are never part of
// the sequence's tokens, so prefix-cache hashes only ever cover accepted tokens.

package engine

import "fmt"

// SetDraft gives running sequence id draft tokens to verify in the next step, replacing any
// earlier ones. It keeps at most as many as leave room for the bonus token under MaxTokens and
// the maximum model length, and none unless the sequence is in decode (its only uncomputed
// token is its last one: not a prompt chunk, a recompute or forced tokens). It returns how
// many it kept. Call it after Update and before Schedule.
func (s *Scheduler) SetDraft(id SeqID, toks []int) (int, error) {
	if s.pending != nil {
		return 0, fmt.Errorf("engine: SetDraft while a plan is pending")
	}
	seq := s.seqs[id]
	if seq == nil || seq.Status != StatusRunning {
		return 0, fmt.Errorf("engine: SetDraft: sequence %d is not running", id)
	}
	seq.draft = seq.draft[:0]
	if seq.NumComputedTokens != seq.NumTokens()-1 {
		return 0, nil
	}
	k := min(len(toks), s.roomForDrafts(seq))
	seq.draft = append(seq.draft, toks[:max(k, 0)]...)
	return len(seq.draft), nil
}

// Draft returns the draft tokens set for sequence id and not yet verified (do not modify).
func (s *Scheduler) Draft(id SeqID) []int {
	if seq := s.seqs[id]; seq != nil {
		return seq.draft
	}
	return nil
}

// roomForDrafts is how many drafts seq may verify: all of them accepted plus the bonus token
// must not pass MaxTokens or the maximum model length.
func (s *Scheduler) roomForDrafts(seq *Sequence) int {
	room := s.cfg.MaxModelLenTokens - seq.NumTokens()
	if seq.MaxTokens > 0 {
		room = min(room, seq.MaxTokens-seq.NumOutputTokens())
	}
	return room - 1
}

// scheduleDraft grants seq, which gets n known tokens this step, its drafts when it is in
// decode: as many as the budget allows with one token left for each of the later running
// sequences, and only if their blocks are free. It returns the number granted (0: schedule
// seq as usual); on success seq's blocks already cover them.
func (s *Scheduler) scheduleDraft(seq *Sequence, n, budget, later int) int {
	if len(seq.draft) == 0 || n != 1 || seq.NumComputedTokens != seq.NumTokens()-1 {
		return 0
	}
	k := min(len(seq.draft), budget-n-later, s.roomForDrafts(seq))
	if k <= 0 || !s.appendSlots(seq.ID, seq.NumComputedTokens+n+k) {
		return 0
	}
	return k
}

// dropDrafts takes back every draft granted so far this step (when a sequence needs blocks:
// drafts are the first thing to give up) and returns the budget it frees.
func (s *Scheduler) dropDrafts() int {
	freed := 0
	for _, seq := range s.running {
		if k := seq.numDraft; k > 0 {
			seq.numNew -= k
			seq.numDraft = 0
			freed += k
			s.truncate(seq.ID, seq.NumComputedTokens+seq.numNew)
		}
	}
	return freed
}
