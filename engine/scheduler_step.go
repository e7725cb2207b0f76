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
	Tokens     []int     // token ids to run this step (the scheduler's buffer: valid until the next Schedule)
	StartPos   int       // position of Tokens[0] (= tokens already computed)
	BlockTable []BlockID // covers StartPos+len(Tokens) positions (the scheduler's buffer, as Tokens)
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
//
// The plan and every slice in it belong to the scheduler and are reused: they are valid until
// the next Schedule (copy what must outlive the step, StepPlan.Clone). A step allocates
// nothing once the buffers have grown to the largest plan.
func (s *Scheduler) Schedule() *StepPlan {
	if s.pending != nil {
		panic("engine: Schedule called before Update of the previous plan")
	}
	plan := &s.plan
	*plan = StepPlan{Step: s.stats.Steps, Seqs: plan.Seqs[:0], Preempted: plan.Preempted[:0]}
	budget := s.cfg.MaxNumBatchedTokens
	// Each scheduled sequence's grant is in its numNew (drafts included) and numDraft (of
	// which drafts, scheduler_spec.go); drafted counts the sequences with numDraft > 0.
	drafted := 0

	// Running sequences first, in admission order.
	for i := 0; i < len(s.running) && budget > 0; {
		seq := s.running[i]
		n := min(seq.NumTokens()-seq.NumComputedTokens, budget)
		if k := s.scheduleDraft(seq, n, budget, len(s.running)-i-1); k > 0 {
			seq.numNew, seq.numDraft = n+k, k
			drafted++
			budget -= n + k
			i++
			continue
		}
		scheduled := true
		for !s.appendSlots(seq.ID, seq.NumComputedTokens+n) {
			if drafted > 0 { // drafts never cost a preemption: take them back first
				budget += s.dropDrafts()
				drafted = 0
				continue
			}
			v := s.victim()
			victim := s.preempt(v)
			plan.Preempted = append(plan.Preempted, victim.ID)
			if victim.numNew > 0 { // already scheduled this step: take it back
				budget += victim.numNew
				victim.numNew, victim.numDraft = 0, 0
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
		seq.numNew = n
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
		seq.numNew = n
		budget -= n
	}

	// The plan's token ids and block tables are slices of two flat buffers (each entry capped
	// at its own length, so an append to one never writes into the next).
	s.tokBuf, s.tabBuf, s.grpBuf, s.planSeqs = s.tokBuf[:0], s.tabBuf[:0], s.grpBuf[:0], s.planSeqs[:0]
	for _, seq := range s.running {
		n, k := seq.numNew, seq.numDraft
		seq.numNew, seq.numDraft = 0, 0
		if n == 0 {
			seq.draft = seq.draft[:0]
			continue
		}
		start := seq.NumComputedTokens
		known := n - k // tokens of seq.tokens; the drafts follow them
		a := len(s.tokBuf)
		s.tokBuf = append(append(s.tokBuf, seq.tokens[start:start+known]...), seq.draft[:k]...)
		b := len(s.tabBuf)
		s.tabBuf = s.blocks.appendBlockTable(s.tabBuf, seq.ID)
		table := s.tabBuf[b:len(s.tabBuf):len(s.tabBuf)]
		if len(table) == 0 {
			table = nil
		}
		plan.Seqs = append(plan.Seqs, ScheduledSeq{
			ID:          seq.ID,
			Tokens:      s.tokBuf[a:len(s.tokBuf):len(s.tokBuf)],
			StartPos:    start,
			BlockTable:  table,
			GroupTables: s.appendGroupTables(seq.ID),
			NeedsLogits: start+known == seq.NumTokens(),
			Prefill:     start+known < seq.NumTokens() || known > 1,
			NumDrafts:   k,
			Adapter:     seq.Adapter,
		})
		s.planSeqs = append(s.planSeqs, seq)
		plan.NumBatchedTokens += n
		seq.draft = seq.draft[:0] // a draft is for one step (the plan holds a copy)
	}
	s.stats.Steps++
	s.pending = plan
	return plan
}

// Clone returns a deep copy of p that stays valid after the scheduler's next Schedule.
func (p *StepPlan) Clone() *StepPlan {
	c := &StepPlan{Step: p.Step, NumBatchedTokens: p.NumBatchedTokens, Preempted: slices.Clone(p.Preempted)}
	c.Seqs = make([]ScheduledSeq, len(p.Seqs))
	for i, ss := range p.Seqs {
		ss.Tokens, ss.BlockTable = slices.Clone(ss.Tokens), slices.Clone(ss.BlockTable)
		if ss.GroupTables != nil {
			g := make([][]BlockID, len(ss.GroupTables))
			for j, t := range ss.GroupTables {
				g[j] = slices.Clone(t)
			}
			ss.GroupTables = g
		}
		c.Seqs[i] = ss
	}
	return c
}
