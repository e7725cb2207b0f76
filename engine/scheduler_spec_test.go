// This file tests the scheduler's speculative decoding without a model: the fake runner
// (fakerunner_test.go) extended to verify drafts, so a rejected draft's KV row read later, a
// prefix-cache hit on a block holding rejected tokens, or a write into a shared block is
// caught; a run with corrupted drafts, preemption and prefix sharing gives exactly the outputs
// of a run without drafts, and leaves every block free.

package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// runSpec executes plan like fakeRunner.run, drafts included, and verifies them greedily
// against fakeModel: each entry gets its accepted drafts and the token after them.
func (r *fakeRunner) runSpec(s *Scheduler, plan *StepPlan) (map[SeqID][]int, error) {
	out := map[SeqID][]int{}
	for _, ss := range plan.Seqs {
		seq := s.seqs[ss.ID]
		if seq == nil {
			continue
		}
		known := len(ss.Tokens) - ss.NumDrafts
		hist := append(slices.Clone(seq.tokens[:ss.StartPos+known]), ss.Tokens[known:]...)
		end := len(hist)
		if ss.StartPos+len(ss.Tokens) != end || len(ss.BlockTable)*r.bs < end {
			return nil, fmt.Errorf("seq %d: chunk of %d at %d, %d blocks", ss.ID, len(ss.Tokens), ss.StartPos, len(ss.BlockTable))
		}
		ctx := historyHashes(hist)
		for j, tok := range ss.Tokens {
			p := ss.StartPos + j
			if tok != hist[p] {
				return nil, fmt.Errorf("seq %d: token %d at pos %d, want %d", ss.ID, tok, p, hist[p])
			}
			b := ss.BlockTable[p/r.bs]
			if n := s.blocks.RefCount(b); n != 1 || s.blocks.meta[b].cached {
				return nil, fmt.Errorf("seq %d: write to block %d (%d refs, cached %v)", ss.ID, b, n, s.blocks.meta[b].cached)
			}
			r.slots[b][p%r.bs] = kvSlot{tok: tok, pos: p, ctx: ctx[p], valid: true}
		}
		for p := r.first(ss.StartPos); p < end; p++ {
			sl := r.slots[ss.BlockTable[p/r.bs]][p%r.bs]
			if !sl.valid || sl.pos != p || sl.tok != hist[p] || sl.ctx != ctx[p] {
				return nil, fmt.Errorf("seq %d: pos %d reads %+v, want token %d", ss.ID, p, sl, hist[p])
			}
		}
		if !ss.NeedsLogits {
			continue
		}
		var toks []int
		for i := 0; i <= ss.NumDrafts; i++ {
			next := fakeModel(hist[:end-ss.NumDrafts+i])
			toks = append(toks, next)
			if i == ss.NumDrafts || next != ss.Tokens[known+i] {
				break
			}
		}
		out[ss.ID] = toks
	}
	return out, nil
}

// trueDraft is the k tokens fakeModel generates after toks, each replaced by a wrong one with
// probability bad.
func trueDraft(toks []int, k int, bad float64, rng *rand.Rand) []int {
	h := slices.Clone(toks)
	var d []int
	for range k {
		t := fakeModel(h)
		if rng.Float64() < bad {
			t = 1000 + rng.IntN(5) // never what fakeModel says (100..999)
		}
		h = append(h, t)
		d = append(d, t)
	}
	return d
}

type specRun struct {
	outputs     map[SeqID][]int
	drafts      int
	accepted    int
	preemptions int64
}

// runSchedulerSpec serves reqs to completion with the fake runner; with k > 0 every running
// sequence in decode gets up to k drafts per step (corrupted with probability bad).
func runSchedulerSpec(t *testing.T, cfg Config, reqs []SeqRequest, k int, bad float64) specRun {
	t.Helper()
	s, err := NewScheduler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := newFakeRunner(cfg.NumBlocks, cfg.BlockSizeTokens)
	rng := rand.New(rand.NewPCG(1, 2))
	res := specRun{outputs: map[SeqID][]int{}}
	for _, q := range reqs {
		if _, err := s.AddRequest(q); err != nil {
			t.Fatal(err)
		}
	}
	for step := 0; s.HasUnfinished(); step++ {
		if step > 10000 {
			t.Fatal("no progress")
		}
		if k > 0 {
			for _, seq := range s.running {
				d := trueDraft(seq.tokens, 1+rng.IntN(k), bad, rng)
				if _, err := s.SetDraft(seq.ID, d); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.check(); err != nil {
				t.Fatalf("step %d, drafts set: %v", step, err)
			}
		}
		plan := s.Schedule()
		if plan.NumBatchedTokens > cfg.MaxNumBatchedTokens {
			t.Fatalf("plan of %d tokens", plan.NumBatchedTokens)
		}
		sampled, err := r.runSpec(s, plan)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		seqs := map[SeqID]*Sequence{}
		for _, ss := range plan.Seqs {
			seqs[ss.ID] = s.seqs[ss.ID]
		}
		outs, err := s.UpdateTokens(plan, sampled)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			res.drafts += o.Drafts
			res.accepted += o.Accepted
			if o.Status != StatusRunning {
				res.outputs[o.ID] = slices.Clone(seqs[o.ID].Output())
			}
		}
		if err := s.check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for _, seq := range s.running { // rolled back: no block past the next token's slot
			if nb := len(s.blocks.tables[seq.ID].blocks); seq.NumComputedTokens == seq.NumTokens()-1 && nb > s.blocks.blocksFor(seq.NumTokens()) {
				t.Fatalf("seq %d holds %d blocks for %d tokens", seq.ID, nb, seq.NumTokens())
			}
		}
	}
	if err := s.blocks.checkEmpty(); err != nil {
		t.Fatal(err)
	}
	res.preemptions = s.stats.Preemptions
	return res
}

func specRequests(n int, seed uint64) []SeqRequest {
	rng := rand.New(rand.NewPCG(seed, 7))
	shared := []int{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	var reqs []SeqRequest
	for i := range n {
		p := slices.Clone(shared[:rng.IntN(len(shared))])
		for len(p) < 3+rng.IntN(12) {
			p = append(p, 20+rng.IntN(30))
		}
		var stop []int
		if i%3 == 0 {
			stop = []int{100 + rng.IntN(900)}
		}
		reqs = append(reqs, SeqRequest{ID: SeqID(i), Prompt: p, MaxTokens: 1 + rng.IntN(40), StopTokenIDs: stop, ArrivalTime: int64(i)})
	}
	return reqs
}

func TestSchedulerSpecMatchesPlain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		numBlocks int
		budget    int
	}{{"roomy", 256, 64}, {"tight budget", 256, 9}, {"tiny pool", 14, 64}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.NumBlocks, cfg.BlockSizeTokens, cfg.MaxNumBatchedTokens, cfg.MaxModelLenTokens = tc.numBlocks, 4, tc.budget, 50
			reqs := specRequests(12, 3)
			want := runSchedulerSpec(t, cfg, reqs, 0, 0)
			for _, bad := range []float64{0, 0.3, 1} {
				got := runSchedulerSpec(t, cfg, reqs, 5, bad)
				for id, w := range want.outputs {
					if !slices.Equal(got.outputs[id], w) {
						t.Errorf("bad %.1f: seq %d: %v, want %v", bad, id, got.outputs[id], w)
					}
				}
				if got.drafts == 0 || (bad == 1) != (got.accepted == 0) {
					t.Errorf("bad %.1f: %d drafts, %d accepted", bad, got.drafts, got.accepted)
				}
				t.Logf("bad %.1f: %d drafts, %d accepted, %d preemptions (plain: %d)", bad, got.drafts, got.accepted, got.preemptions, want.preemptions)
			}
		})
	}
}

// TestSchedulerSetDraft walks one sequence through SetDraft, Schedule and Update by hand.
func TestSchedulerSetDraft(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumBlocks, cfg.BlockSizeTokens, cfg.MaxModelLenTokens = 16, 4, 64
	s, _ := NewScheduler(cfg)
	s.AddRequest(SeqRequest{ID: 1, Prompt: []int{1, 2, 3}, MaxTokens: 9, StopTokenIDs: []int{99}})
	if n, err := s.SetDraft(1, []int{7}); err == nil || n != 0 {
		t.Fatal("SetDraft on a waiting sequence")
	}
	plan := s.Schedule()
	if _, err := s.SetDraft(1, []int{7}); err == nil {
		t.Fatal("SetDraft with a plan pending")
	}
	s.Update(plan, map[SeqID]int{1: 10}) // tokens 1 2 3 10; 1 output
	if n, _ := s.SetDraft(1, []int{11, 12, 13, 14, 15, 16, 17, 18, 19}); n != 7 {
		t.Fatalf("kept %d drafts, want 7 (MaxTokens 9: 1 done, 7 drafts + 1 bonus)", n)
	}
	plan = s.Schedule()
	ss := plan.Seqs[0]
	if ss.NumDrafts != 7 || ss.StartPos != 3 || !slices.Equal(ss.Tokens, []int{10, 11, 12, 13, 14, 15, 16, 17}) || ss.Prefill || !ss.NeedsLogits {
		t.Fatalf("plan %+v", ss)
	}
	if len(ss.BlockTable) != 3 || s.blocks.NumFreeBlocks() != 13 {
		t.Fatalf("%d blocks, %d free", len(ss.BlockTable), s.blocks.NumFreeBlocks())
	}
	if _, err := s.UpdateTokens(plan, map[SeqID][]int{1: {11, 5, 6}}); err == nil {
		t.Fatal("accepted a token that was not drafted")
	}
	outs, err := s.UpdateTokens(plan, map[SeqID][]int{1: {11, 12, 40}}) // 2 accepted, 40 instead of 13
	if err != nil || len(outs) != 1 || !slices.Equal(outs[0].Tokens, []int{11, 12, 40}) || outs[0].Accepted != 2 || outs[0].Drafts != 7 {
		t.Fatalf("outs %+v, %v", outs, err)
	}
	seq := s.Sequence(1)
	// tokens 1 2 3 10 11 12 40: 6 computed, the 7th's slot kept in block 1, block 2 freed.
	if seq.NumComputedTokens != 6 || seq.NumTokens() != 7 || len(s.blocks.BlockTable(1)) != 2 || s.blocks.NumFreeBlocks() != 14 {
		t.Fatalf("computed %d of %d, %d blocks, %d free", seq.NumComputedTokens, seq.NumTokens(), len(s.blocks.BlockTable(1)), s.blocks.NumFreeBlocks())
	}
	if s.blocks.NumCachedBlocks() != 1 { // block 0 (1 2 3 10) is full and computed; block 1 is not full
		t.Fatalf("%d cached blocks", s.blocks.NumCachedBlocks())
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	// A draft is for one step: unset, the next step is a plain decode.
	s.SetDraft(1, []int{41, 42})
	plan = s.Schedule()
	s.Update(plan, map[SeqID]int{1: 41})
	plan = s.Schedule()
	if plan.Seqs[0].NumDrafts != 0 || len(plan.Seqs[0].Tokens) != 1 {
		t.Fatalf("stale draft scheduled: %+v", plan.Seqs[0])
	}
	s.Update(plan, map[SeqID]int{1: 50})
	// A stop id among the accepted drafts ends the sequence there; everything is freed.
	if n, _ := s.SetDraft(1, []int{51, 99, 52}); n != 2 { // 6 outputs of 9: 2 drafts + 1
		t.Fatalf("kept %d drafts", n)
	}
	plan = s.Schedule()
	outs, _ = s.UpdateTokens(plan, map[SeqID][]int{1: {51, 99, 53}})
	if len(outs) != 1 || !slices.Equal(outs[0].Tokens, []int{51, 99}) || outs[0].Status != StatusFinishedStopped || outs[0].Accepted != 2 {
		t.Fatalf("outs %+v", outs)
	}
	if err := s.blocks.checkEmpty(); err != nil {
		t.Fatal(err)
	}
}

func TestBlockTruncate(t *testing.T) {
	m := NewBlockManager(6, 4, true)
	toks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	m.Allocate(1, toks, 9, nil, "")
	m.Commit(1, toks, 8)
	m.AppendSlots(1, 20) // 5 blocks
	m.Truncate(1, 9)
	if len(m.BlockTable(1)) != 3 || m.NumFreeBlocks() != 3 || m.NumCachedBlocks() != 2 {
		t.Fatalf("%d blocks, %d free, %d cached", len(m.BlockTable(1)), m.NumFreeBlocks(), m.NumCachedBlocks())
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
	m.Truncate(1, 12) // longer than held: nothing
	if len(m.BlockTable(1)) != 3 {
		t.Fatal("Truncate grew the table")
	}
	// Shared cached blocks: truncating one holder keeps them for the other.
	computed, n := m.GetComputedBlocks(toks, "")
	m.Allocate(2, toks, 9, computed, "")
	m.Truncate(1, 4)
	if n != 8 || m.RefCount(computed[0]) != 2 || m.RefCount(computed[1]) != 1 {
		t.Fatalf("hit %d, refs %d %d", n, m.RefCount(computed[0]), m.RefCount(computed[1]))
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
	m.Truncate(1, 0)
	m.Free(1)
	m.Free(2)
	if err := m.checkEmpty(); err != nil {
		t.Fatal(err)
	}
}
