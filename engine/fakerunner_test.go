// This file implements a fake model runner for the tests: a paged "KV cache" whose slots hold
// (token id, position) instead of vectors. Running a StepPlan writes each scheduled token into
// its slot through the block table and reads every earlier position back the same way, so a
// wrong block table, a stale prefix-cache hit (even one holding the same token at the same
// position after a different history) or a write into a shared block is caught. The
// "model" picks the next token as a hash of the token history it read from the cache, so a
// sequence's output is a pure function of what the cache really held.

package engine

import (
	"fmt"
	"hash/fnv"
)

// kvSlot stands for one position's K and V rows, which depend on the token, its position and
// every token before it: ctx is a hash of the whole history up to and including the token.
type kvSlot struct {
	tok, pos int
	ctx      uint64
	valid    bool
}

// historyHashes returns, for each position p, a hash of tokens[:p+1].
func historyHashes(tokens []int) []uint64 {
	out := make([]uint64, len(tokens))
	h := uint64(14695981039346656037)
	for i, t := range tokens {
		h = (h ^ uint64(t+1)) * 1099511628211
		h ^= h >> 29
		out[i] = h
	}
	return out
}

type fakeRunner struct {
	bs     int
	slots  [][]kvSlot // [block][offset]
	window int        // > 0: a row at p reads only positions p-window+1..p (a windowed KV group)
}

// first is the first position a chunk starting at start reads.
func (r *fakeRunner) first(start int) int {
	if r.window > 0 {
		return max(0, start-r.window+1)
	}
	return 0
}

func newFakeRunner(numBlocks, blockSizeTokens int) *fakeRunner {
	r := &fakeRunner{bs: blockSizeTokens, slots: make([][]kvSlot, numBlocks)}
	for i := range r.slots {
		r.slots[i] = make([]kvSlot, blockSizeTokens)
	}
	return r
}

// fakeModel is the next token after history: 100..999.
func fakeModel(history []int) int {
	h := fnv.New64a()
	for _, t := range history {
		fmt.Fprintf(h, "%d,", t)
	}
	return 100 + int(h.Sum64()%900)
}

// run executes plan against the scheduler's current view and returns the sampled tokens.
func (r *fakeRunner) run(s *Scheduler, plan *StepPlan) (map[SeqID]int, error) {
	sampled := map[SeqID]int{}
	for _, ss := range plan.Seqs {
		seq := s.seqs[ss.ID]
		if seq == nil {
			continue
		}
		end := ss.StartPos + len(ss.Tokens)
		ctx := historyHashes(seq.tokens[:end])
		if len(ss.BlockTable)*r.bs < end {
			return nil, fmt.Errorf("seq %d: block table of %d blocks for %d positions", ss.ID, len(ss.BlockTable), end)
		}
		for j, tok := range ss.Tokens {
			p := ss.StartPos + j
			if want := seq.tokens[p]; tok != want {
				return nil, fmt.Errorf("seq %d: token %d at pos %d, sequence has %d", ss.ID, tok, p, want)
			}
			b := ss.BlockTable[p/r.bs]
			if n := s.blocks.RefCount(b); n != 1 {
				return nil, fmt.Errorf("seq %d: write to block %d with %d references", ss.ID, b, n)
			}
			if s.blocks.meta[b].cached {
				return nil, fmt.Errorf("seq %d: write to cached block %d", ss.ID, b)
			}
			r.slots[b][p%r.bs] = kvSlot{tok: tok, pos: p, ctx: ctx[p], valid: true}
		}
		history := make([]int, end)
		for p := range end {
			sl := r.slots[ss.BlockTable[p/r.bs]][p%r.bs]
			if !sl.valid || sl.pos != p || sl.tok != seq.tokens[p] || sl.ctx != ctx[p] {
				return nil, fmt.Errorf("seq %d: pos %d reads %+v, want token %d", ss.ID, p, sl, seq.tokens[p])
			}
			history[p] = sl.tok
		}
		if ss.NeedsLogits {
			sampled[ss.ID] = fakeModel(history)
		}
	}
	return sampled, nil
}
