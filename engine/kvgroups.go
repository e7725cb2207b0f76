// This file implements KV groups in the scheduler: when a model's layers attend under
// different windows (Gemma 2: local layers under a sliding window, global layers without),
// each group of layers with one window has its own block pool (a BlockManager) and each
// sequence one block table per group. Every operation on a sequence's blocks applies to every
// group, all or nothing; after each step a windowed group releases the blocks wholly before
// the window of the sequence's next row (ReleaseBefore), so its blocks per sequence stop
// growing at about window/BlockSizeTokens+1 while the global group's grow with the sequence.
// Prefix caching stays on: a hit is the longest prefix cached in every group (a windowed
// group's released blocks stay cached until evicted). With one group (every model without
// windows) each operation is the single block manager's, unchanged.

package engine

import (
	"errors"
	"fmt"
)

// KVGroup is one KV group's pool in Config.KVGroups.
type KVGroup struct {
	Window        int   // > 0: rows attend to the Window latest positions (blocks before are released); 0: all
	NumBlocks     int   // the group's pool in blocks; 0 = Config.NumBlocks
	BytesPerToken int64 // K and V bytes per token of the group's layers: weighs KV usage (0 counts as 1)
}

// validateGroups checks c.KVGroups: a windowless group holds one maximum-length sequence
// (MaxModelLenTokens <= its pool); a windowed one as well, so that a sequence alone always
// fits every group (its transient blocks, a prompt chunk or a prefix hit, never exceed its
// length).
func (c Config) validateGroups() error {
	for g, kg := range c.KVGroups {
		nb := c.groupBlocks(g)
		switch {
		case kg.Window < 0 || kg.NumBlocks < 0 || kg.BytesPerToken < 0:
			return fmt.Errorf("engine: KV group %d: window %d, %d blocks, %d B/token: must not be negative", g, kg.Window, kg.NumBlocks, kg.BytesPerToken)
		case nb*c.BlockSizeTokens < c.MaxModelLenTokens:
			return fmt.Errorf("engine: KV group %d: %d blocks of %d tokens hold less than MaxModelLenTokens %d", g, nb, c.BlockSizeTokens, c.MaxModelLenTokens)
		}
	}
	if len(c.KVGroups) > 1 && c.KVGroups[0].NumBlocks != 0 && c.KVGroups[0].NumBlocks != c.NumBlocks {
		return errors.New("engine: KV group 0's NumBlocks must be 0 or NumBlocks")
	}
	return nil
}

// groupBlocks is group g's pool in blocks.
func (c Config) groupBlocks(g int) int {
	if g < len(c.KVGroups) && c.KVGroups[g].NumBlocks > 0 {
		return c.KVGroups[g].NumBlocks
	}
	return c.NumBlocks
}

// NumKVGroups is the number of block pools (1 without KVGroups).
func (c Config) NumKVGroups() int { return max(len(c.KVGroups), 1) }

// GroupBlocks returns every group's pool in blocks.
func (c Config) GroupBlocks() []int {
	out := make([]int, c.NumKVGroups())
	for g := range out {
		out[g] = c.groupBlocks(g)
	}
	return out
}

// GroupBlocks returns KV group g's block manager (group 0: Blocks).
func (s *Scheduler) GroupBlocks(g int) *BlockManager { return s.groups[g] }

// NumKVGroups is the number of KV groups (block managers).
func (s *Scheduler) NumKVGroups() int { return len(s.groups) }

// KVUsage is the fraction of the KV memory held by sequences: every group's referenced
// blocks weighed by its bytes per block (with one group, Blocks().Usage()).
func (s *Scheduler) KVUsage() float64 {
	if len(s.groups) == 1 {
		return s.blocks.Usage()
	}
	var used, total float64
	for g, m := range s.groups {
		w := float64(1)
		if g < len(s.cfg.KVGroups) && s.cfg.KVGroups[g].BytesPerToken > 0 {
			w = float64(s.cfg.KVGroups[g].BytesPerToken)
		}
		used += w * float64(m.NumBlocks()-m.NumFreeBlocks())
		total += w * float64(m.NumBlocks())
	}
	return used / total
}

// freeBlocks drops seq's tables in every group.
func (s *Scheduler) freeBlocks(id SeqID) {
	for _, m := range s.groups {
		m.Free(id)
	}
}

// appendSlots grows seq's tables of every group to numTokens, all or nothing.
func (s *Scheduler) appendSlots(id SeqID, numTokens int) bool {
	if len(s.groups) == 1 {
		return s.blocks.AppendSlots(id, numTokens)
	}
	for _, m := range s.groups {
		if !m.CanAppendSlots(id, numTokens) {
			return false
		}
	}
	for _, m := range s.groups {
		m.AppendSlots(id, numTokens)
	}
	return true
}

// truncate shrinks seq's tables of every group to numTokens.
func (s *Scheduler) truncate(id SeqID, numTokens int) {
	for _, m := range s.groups {
		m.Truncate(id, numTokens)
	}
}

// commit enters seq's computed full blocks into every group's prefix cache.
func (s *Scheduler) commit(id SeqID, tokens []int, numComputed int) {
	for _, m := range s.groups {
		m.Commit(id, tokens, numComputed)
	}
}

// computedBlocks is GetComputedBlocks over every group: the longest prefix cached in all of
// them, and each group's blocks for it.
func (s *Scheduler) computedBlocks(tokens []int, salt string) ([][]BlockID, int) {
	for len(s.computed) < len(s.groups) {
		s.computed = append(s.computed, nil)
	}
	out := s.computed[:len(s.groups)]
	n := 0
	for g, m := range s.groups {
		c, k := m.computedBlocks(out[g], tokens, salt)
		out[g] = c
		if g == 0 {
			n = k
		}
		n = min(n, k)
	}
	for g := range out {
		out[g] = out[g][:n/s.cfg.BlockSizeTokens]
	}
	s.computed = out
	return out, n
}

// allocate gives seq tables for numTokens in every group, all or nothing.
func (s *Scheduler) allocate(seq *Sequence, numTokens int, computed [][]BlockID) bool {
	if len(s.groups) == 1 {
		return s.blocks.Allocate(seq.ID, seq.tokens, numTokens, computed[0], seq.CacheSalt)
	}
	for g, m := range s.groups {
		if !m.CanAllocate(numTokens, computed[g]) {
			return false
		}
	}
	for g, m := range s.groups {
		m.Allocate(seq.ID, seq.tokens, numTokens, computed[g], seq.CacheSalt)
	}
	return true
}

// releaseWindows releases, in every windowed group, seq's blocks wholly before the window of
// its next row (at position NumComputedTokens).
func (s *Scheduler) releaseWindows(seq *Sequence) {
	for g, kg := range s.cfg.KVGroups {
		if kg.Window > 0 {
			s.groups[g].ReleaseBefore(seq.ID, seq.NumComputedTokens-kg.Window+1)
		}
	}
}

// appendGroupTables appends seq's tables of groups 1.. to the plan's table buffer s.tabBuf and
// their slices to s.grpBuf, and returns the latter's new entries (nil with one group).
func (s *Scheduler) appendGroupTables(id SeqID) [][]BlockID {
	if len(s.groups) == 1 {
		return nil
	}
	first := len(s.grpBuf)
	for _, m := range s.groups[1:] {
		a := len(s.tabBuf)
		s.tabBuf = m.appendBlockTable(s.tabBuf, id)
		s.grpBuf = append(s.grpBuf, s.tabBuf[a:len(s.tabBuf):len(s.tabBuf)])
	}
	return s.grpBuf[first:len(s.grpBuf):len(s.grpBuf)]
}

// KVGroupsString describes the KV groups for a log line: "global: N blocks" for the
// windowless group (its layers attend to every position), "window W: N blocks" for a
// windowed one; "" without groups.
func (c Config) KVGroupsString() string {
	var out string
	for g, kg := range c.KVGroups {
		w := "global"
		if kg.Window > 0 {
			w = fmt.Sprintf("window %d", kg.Window)
		}
		if g > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s: %d blocks", w, c.groupBlocks(g))
	}
	return out
}
