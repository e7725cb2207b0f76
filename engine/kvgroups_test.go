// Tests of KV groups: ReleaseBefore in the block manager, and the randomized scheduler test
// (random_test.go) with windowed groups: every group's fake KV cache is written and read
// through its own tables (a windowed group's reads only inside the window), a windowed group
// holds exactly the blocks of its sequences' windows after every step, outputs are the
// model's, and every block of every group is free at the end.

package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestReleaseBefore(t *testing.T) {
	m := NewBlockManager(8, 4, true)
	toks := make([]int, 20)
	for i := range toks {
		toks[i] = i
	}
	if !m.Allocate(1, toks, 17, nil, "") || m.NumHeldBlocks(1) != 5 {
		t.Fatalf("allocate: %d held", m.NumHeldBlocks(1))
	}
	m.Commit(1, toks, 17)
	m.ReleaseBefore(1, 9) // positions 0..8 unread: blocks 0 and 1 go
	if got := m.BlockTable(1); !slices.Equal(got[:2], []BlockID{NoBlock, NoBlock}) || got[2] == NoBlock {
		t.Fatalf("table after release: %v", got)
	}
	if m.NumHeldBlocks(1) != 3 || m.NumFreeBlocks() != 5 || m.NumCachedBlocks() != 4 {
		t.Fatalf("%d held, %d free, %d cached", m.NumHeldBlocks(1), m.NumFreeBlocks(), m.NumCachedBlocks())
	}
	m.ReleaseBefore(1, 3) // nothing more
	m.ReleaseBefore(1, -5)
	if err := m.check(); err != nil || m.NumHeldBlocks(1) != 3 {
		t.Fatalf("%v, %d held", err, m.NumHeldBlocks(1))
	}
	// The released blocks stay cached: a new sequence with the same prefix hits them.
	if c, n := m.GetComputedBlocks(toks[:17], ""); len(c) != 4 || n != 16 {
		t.Fatalf("prefix hit %v %d", c, n)
	}
	if !m.AppendSlots(1, 20) || m.NumHeldBlocks(1) != 3 {
		t.Fatalf("append: %d held", m.NumHeldBlocks(1))
	}
	m.Truncate(1, 4) // never below the released entries
	if len(m.BlockTable(1)) != 2 || m.NumHeldBlocks(1) != 0 {
		t.Fatalf("truncate: %v", m.BlockTable(1))
	}
	m.Free(1)
	if err := m.checkEmpty(); err != nil {
		t.Fatal(err)
	}
}

// runGroups plays plan on the fake caches of KV groups 1..: each scheduled token is written
// into its slot through the group's table and every position the rows attend to is read back.
func (o *opRunner) runGroups(plan *StepPlan) error {
	for gi, r := range o.groupRunners {
		g := gi + 1
		m := o.s.groups[g]
		for _, ss := range plan.Seqs {
			seq := o.s.seqs[ss.ID]
			if seq == nil {
				continue
			}
			if len(ss.GroupTables) != len(o.groupRunners) {
				return fmt.Errorf("seq %d: %d group tables for %d groups", ss.ID, len(ss.GroupTables)+1, len(o.groupRunners)+1)
			}
			table := ss.GroupTables[gi]
			known := len(ss.Tokens) - ss.NumDrafts
			hist := append(slices.Clone(seq.tokens[:ss.StartPos+known]), ss.Tokens[known:]...)
			end := len(hist)
			if len(table)*r.bs < end {
				return fmt.Errorf("group %d: seq %d: %d blocks for %d positions", g, ss.ID, len(table), end)
			}
			ctx := historyHashes(hist)
			for j, tok := range ss.Tokens {
				p := ss.StartPos + j
				b := table[p/r.bs]
				if b == NoBlock || m.RefCount(b) != 1 || m.meta[b].cached {
					return fmt.Errorf("group %d: seq %d: write of pos %d to block %d", g, ss.ID, p, b)
				}
				r.slots[b][p%r.bs] = kvSlot{tok: tok, pos: p, ctx: ctx[p], valid: true}
			}
			for p := r.first(ss.StartPos); p < end; p++ {
				b := table[p/r.bs]
				if b == NoBlock {
					return fmt.Errorf("group %d: seq %d: pos %d (window %d, start %d) released", g, ss.ID, p, r.window, ss.StartPos)
				}
				if sl := r.slots[b][p%r.bs]; !sl.valid || sl.pos != p || sl.tok != hist[p] || sl.ctx != ctx[p] {
					return fmt.Errorf("group %d: seq %d: pos %d reads %+v, want token %d", g, ss.ID, p, sl, hist[p])
				}
			}
		}
	}
	return nil
}

// checkWindows checks, after an Update, that every windowed group has released exactly the
// blocks before the window of each running sequence's next row.
func (o *opRunner) checkWindows() error {
	bs := o.s.cfg.BlockSizeTokens
	for g, kg := range o.s.cfg.KVGroups {
		if kg.Window == 0 {
			continue
		}
		for _, q := range o.s.running {
			t := o.s.groups[g].tables[q.ID]
			want := min(max(0, q.NumComputedTokens-kg.Window+1)/bs, len(t.blocks))
			if t.released != want {
				return fmt.Errorf("group %d (window %d): seq %d at %d released %d blocks, want %d", g, kg.Window, q.ID, q.NumComputedTokens, t.released, want)
			}
		}
	}
	return nil
}

// groupsFromBytes adds KV groups: a windowless group and a windowed one, one windowed group
// only (Phi-3), or a windowless and two windowed ones; windowed pools hold at least one
// maximum-length sequence, as Validate asks.
func groupsFromBytes(cfg *Config, src *byteSource) {
	minBlocks := BlocksForLength(cfg.MaxModelLenTokens, cfg.BlockSizeTokens, 0)
	win := func() KVGroup {
		return KVGroup{Window: 1 + src.next()%12, NumBlocks: minBlocks + src.next()%8, BytesPerToken: int64(1 + src.next()%4)}
	}
	switch src.next() % 3 {
	case 0:
		cfg.KVGroups = []KVGroup{{BytesPerToken: 2}, win()}
	case 1:
		cfg.KVGroups = []KVGroup{{Window: 1 + src.next()%12}}
	default:
		cfg.KVGroups = []KVGroup{{BytesPerToken: 2}, win(), win()}
	}
}

func TestRandomOpsKVGroups(t *testing.T) {
	seeds, length := 400, 600
	if testing.Short() {
		seeds = 40
	}
	var totals opTotals
	defer func() { t.Logf("%+v", totals) }()
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		data := make([]byte, length)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if err := runOpsGroups(data, &totals, groupsFromBytes); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

func FuzzOpsKVGroups(f *testing.F) {
	f.Add([]byte{3, 3, 10, 2, 0, 30, 0, 0, 5, 2, 1, 0, 10, 0, 1, 5, 2, 2, 2, 7, 5, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := runOpsGroups(data, nil, groupsFromBytes); err != nil {
			t.Fatal(err)
		}
	})
}
