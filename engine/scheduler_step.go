// This file implements Schedule, one step of continuous batching (vLLM V1's rule): within a
// token budget and a sequence limit, first every running sequence gets its next tokens (one for
// a decode, the rest of its prompt — possibly a chunk — for a prefill), preempting the lowest
// ranked running sequences by recompute when blocks run out; then, if nothing was preempted,
// waiting sequences are admitted in policy order, skipping prefix-cached tokens, until the
// budget, the limit or the blocks run out.

package engine

import "slices"

// ScheduledSeq is one sequence's share of a step: run Tokens at positions StartPos.. with KV
// rows in BlockTable (slot of position p: BlockTable[p/BlockSizeTokens], offset
// p%BlockSizeTokens); positions before StartPos are already in the cache.
type ScheduledSeq struct {
	ID         SeqID
	Tokens     []int     // token ids to run this step (a copy)
	StartPos   int       // position of Tokens[0] (= tokens already computed)
	BlockTable []BlockID // covers StartPos+len(Tokens) positions (a copy)
	// GroupTables are the tables of KV groups 1.. (Config.KVGroups; nil with one group). A
	// windowed group's entries before the window of the first row may be NoBlock.
	GroupTables [][]BlockID
	NeedsLogits bool // the last row's logits are sampled (decode, or the prompt's last chunk)
	Prefill     bool // more than the last known token: a prompt (or recompute) chunk
	// NumDrafts > 0 marks a speculative decode: Tokens is the last known token followed by
	// NumDrafts draft tokens (SetDraft), and all NumDrafts+1 rows' logits are verified.
	NumDrafts int
	Adapter   uint32 // the sequence's run-time LoRA adapter (0: none)
}

// StepPlan is what one step runs: a ragged batch of prefill chunks and decode tokens.
type StepPlan struct {
	Step             int64 // 0, 1, 2 ...
	Seqs             []ScheduledSeq
	NumBatchedTokens int
	Preempted        []SeqID // preempted while scheduling this step (now waiting, no blocks)
}

// Schedule decides the next step. The previous plan must have been passed to Update. An empty
// plan (no Seqs) means nothing can run.
func (s *Scheduler) Schedule() *StepPlan {
	if s.pending != nil {
		panic("engine: Schedule called before Update of the previous plan")
	}
	plan := &StepPlan{Step: s.stats.Steps}
	budget := s.cfg.MaxNumBatchedTokens
	numNew := map[SeqID]int{}  // tokens granted to each scheduled sequence, drafts included
	var numDraft map[SeqID]int // of which draft tokens (scheduler_spec.go)

	// Running sequences first, in admission order.
	for i := 0; i < len(s.running) && budget > 0; {
		seq := s.running[i]
		n := min(seq.NumTokens()-seq.NumComputedTokens, budget)
		if k := s.scheduleDraft(seq, n, budget, len(s.running)-i-1); k > 0 {
			if numDraft == nil {
				numDraft = map[SeqID]int{}
			}
			numDraft[seq.ID] = k
			numNew[seq.ID] = n + k
			budget -= n + k
			i++
			continue
		}
		scheduled := true
		for !s.appendSlots(seq.ID, seq.NumComputedTokens+n) {
			if len(numDraft) > 0 { // drafts never cost a preemption: take them back first
				budget += s.dropDrafts(numNew, numDraft)
				continue
			}
			v := s.victim()
			victim := s.preempt(v)
			plan.Preempted = append(plan.Preempted, victim.ID)
			if granted, ok := numNew[victim.ID]; ok { // already scheduled this step: take it back
				budget += granted
				delete(numNew, victim.ID)
				delete(numDraft, victim.ID)
			}
			if v < i {
				i--
			}
			if victim == seq {
				scheduled = false
				break
			}
		}
		if !scheduled {
			continue // running[i] is now the next sequence
		}
		numNew[seq.ID] = n
		budget -= n
		i++
	}

	// Then waiting sequences, unless this step had to preempt (blocks are short).
	for len(plan.Preempted) == 0 && len(s.waiting) > 0 && budget > 0 && len(s.running) < s.cfg.MaxNumSeqs {
		w := s.nextWaiting()
		seq := s.waiting[w]
		computed, numCached := s.computedBlocks(seq.tokens, seq.CacheSalt)
		n := seq.NumTokens() - numCached
		if n > budget && !s.cfg.ChunkedPrefill && seq.Status == StatusWaiting {
			break // the prompt must run whole; wait for a step with room
		}
		n = min(n, budget)
		if !s.allocate(seq, numCached+n, computed) {
			break
		}
		s.waiting = slices.Delete(s.waiting, w, w+1)
		s.running = append(s.running, seq)
		seq.Status = StatusRunning
		seq.NumComputedTokens = numCached
		seq.NumCachedTokens = numCached
		numNew[seq.ID] = n
		budget -= n
	}

	plan.Seqs = make([]ScheduledSeq, 0, len(numNew))
	for _, seq := range s.running {
		n, ok := numNew[seq.ID]
		if !ok {
			continue
		}
		start := seq.NumComputedTokens
		k := numDraft[seq.ID]
		known := n - k // tokens of seq.tokens; the drafts follow them
		toks := make([]int, 0, n)
		toks = append(append(toks, seq.tokens[start:start+known]...), seq.draft[:k]...)
		plan.Seqs = append(plan.Seqs, ScheduledSeq{
			ID:          seq.ID,
			Tokens:      toks,
			StartPos:    start,
			BlockTable:  s.blocks.BlockTable(seq.ID),
			GroupTables: s.groupTables(seq.ID),
			NeedsLogits: start+known == seq.NumTokens(),
			Prefill:     start+known < seq.NumTokens() || known > 1,
			NumDrafts:   k,
			Adapter:     seq.Adapter,
		})
		plan.NumBatchedTokens += n
	}
	for _, seq := range s.running {
		seq.draft = seq.draft[:0] // a draft is for one step (the plan holds a copy)
	}
	s.stats.Steps++
	s.pending = plan
	return plan
}
