// This file tests the block manager directly: the KV sizing formula, all-or-nothing
// allocation, reference counts with shared prefixes, the never-the-whole-prompt rule, and that
// check() notices corrupted state.

package engine

import (
	"slices"
	"testing"
)

func TestKVBytesPerToken(t *testing.T) {
	// Llama 2 7B in f16: 2 x 32 layers x 32 KV heads x 128 x 2 bytes = 512 KiB per token.
	if got := KVBytesPerToken(32, 32, 128, 2); got != 512<<10 {
		t.Errorf("7B f16: %d", got)
	}
	// Llama 3 8B (GQA, 8 KV heads) in f32: 2 x 32 x 8 x 128 x 4 = 256 KiB.
	if got := KVBytesPerToken(32, 8, 128, 4); got != 256<<10 {
		t.Errorf("8B f32: %d", got)
	}
	// 1 GiB of 16-token blocks at 512 KiB per token: 8 MiB per block, 128 blocks.
	if got := NumBlocksForBudget(1<<30, 16, 512<<10); got != 128 {
		t.Errorf("blocks: %d", got)
	}
	if got := NumBlocksForBudget(1<<20, 16, 512<<10); got != 0 {
		t.Errorf("too small a budget: %d blocks", got)
	}
}

func TestAllocateAllOrNothing(t *testing.T) {
	m := NewBlockManager(4, 4, true)
	toks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if !m.Allocate(1, toks, 12, nil, "") || m.NumFreeBlocks() != 1 {
		t.Fatalf("allocate 3 blocks: free %d", m.NumFreeBlocks())
	}
	if m.Allocate(2, toks, 8, nil, "") {
		t.Fatal("allocated 2 blocks with 1 free")
	}
	if m.AppendSlots(1, 20) {
		t.Fatal("appended 2 blocks with 1 free")
	}
	if m.NumFreeBlocks() != 1 || len(m.BlockTable(1)) != 3 || m.BlockTable(2) != nil {
		t.Fatal("a failed call changed state")
	}
	if !m.AppendSlots(1, 16) || m.NumFreeBlocks() != 0 || m.Usage() != 1 {
		t.Fatal("append to 16 tokens")
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
	m.Free(1)
	if err := m.checkEmpty(); err != nil {
		t.Fatal(err)
	}
}

func TestSharedPrefixRefCounts(t *testing.T) {
	m := NewBlockManager(8, 2, true)
	a := []int{1, 2, 3, 4, 5}
	m.Allocate(1, a, 5, nil, "")
	m.Commit(1, a, 5) // blocks [1 2] [3 4] cached, [5] not
	if m.NumCachedBlocks() != 2 {
		t.Fatalf("cached %d", m.NumCachedBlocks())
	}
	b := []int{1, 2, 3, 4, 9, 9}
	blocks, n := m.GetComputedBlocks(b, "")
	if n != 4 || !slices.Equal(blocks, m.BlockTable(1)[:2]) {
		t.Fatalf("hit %v %d", blocks, n)
	}
	m.Allocate(2, b, 6, blocks, "")
	for _, blk := range blocks {
		if m.RefCount(blk) != 2 {
			t.Errorf("block %d: refs %d", blk, m.RefCount(blk))
		}
	}
	if s := m.Stats(); s.QueryTokens != 11 || s.HitTokens != 4 {
		t.Errorf("stats %+v", s)
	}
	m.Free(1)
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
	for _, blk := range blocks {
		if m.RefCount(blk) != 1 {
			t.Errorf("after free: block %d refs %d", blk, m.RefCount(blk))
		}
	}
	m.Free(2)
	if err := m.checkEmpty(); err != nil {
		t.Fatal(err)
	}
	if m.NumCachedBlocks() != 2 {
		t.Errorf("cached blocks should survive freeing: %d", m.NumCachedBlocks())
	}
}

func TestNeverWholePrompt(t *testing.T) {
	m := NewBlockManager(8, 2, true)
	a := []int{1, 2, 3, 4}
	m.Allocate(1, a, 4, nil, "")
	m.Commit(1, a, 4)
	m.Free(1)
	if blocks, n := m.GetComputedBlocks(a, ""); n != 2 || len(blocks) != 1 {
		t.Errorf("fully cached prompt: %v %d, want one block", blocks, n)
	}
	if blocks, n := m.GetComputedBlocks(a[:1], ""); n != 0 || blocks != nil {
		t.Errorf("one token: %v %d", blocks, n)
	}
	if _, n := m.GetComputedBlocks(append(a, 7), ""); n != 4 {
		t.Errorf("prompt extending the cached one: %d", n)
	}
	if _, n := m.GetComputedBlocks(append(a, 7), "salt"); n != 0 {
		t.Errorf("salted lookup hit %d tokens", n)
	}
}

func TestCheckCatchesCorruption(t *testing.T) {
	corrupt := map[string]func(m *BlockManager){
		"refcount":    func(m *BlockManager) { m.meta[m.tables[1].blocks[0]].refs++ },
		"free list":   func(m *BlockManager) { m.free.remove(m.free.order()[0]) },
		"cache map":   func(m *BlockManager) { clear(m.cache) },
		"double held": func(m *BlockManager) { t := m.tables[1]; t.blocks = append(t.blocks, t.blocks[0]) },
	}
	for name, f := range corrupt {
		m := NewBlockManager(4, 2, true)
		m.Allocate(1, []int{1, 2, 3}, 3, nil, "")
		m.Commit(1, []int{1, 2, 3}, 3)
		f(m)
		if m.check() == nil {
			t.Errorf("%s: check passed", name)
		}
	}
}

// TestPrefixCacheKeyCollision: the prefix-cache map is keyed by 8 bytes of the block hash; a
// block found under the key of a hash that is not its own must not be a hit.
func TestPrefixCacheKeyCollision(t *testing.T) {
	m := NewBlockManager(8, 4, true)
	toks := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if !m.Allocate(1, toks, len(toks), nil, "") {
		t.Fatal("allocate failed")
	}
	m.Commit(1, toks, len(toks))
	if _, n := m.GetComputedBlocks(toks, ""); n != 8 {
		t.Fatalf("%d cached tokens before the collision, want 8", n)
	}
	// Block 0's hash now shares its key with the looked-up hash but differs after it.
	b := m.tables[1].blocks[0]
	m.meta[b].hash[31] ^= 1
	if blocks, n := m.GetComputedBlocks(toks, ""); n != 0 {
		t.Fatalf("a block under a colliding key was a hit: %v, %d tokens", blocks, n)
	}
	m.meta[b].hash[31] ^= 1
	m.Free(1)
	if err := m.checkEmpty(); err != nil {
		t.Fatal(err)
	}
}
