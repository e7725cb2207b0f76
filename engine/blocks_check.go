// This file implements the block manager's invariant check, used by the tests after every
// operation: each block is free, cached with zero references, or referenced; reference counts
// equal the number of block tables holding the block; the free list holds exactly the
// unreferenced blocks; the prefix-cache map and the blocks' cached flags agree.

package engine

import "fmt"

func (m *BlockManager) check() error {
	holders := make([]int32, len(m.meta))
	for seq, t := range m.tables {
		seen := map[BlockID]bool{}
		if t.released > len(t.blocks) {
			return fmt.Errorf("seq %d: %d released of %d blocks", seq, t.released, len(t.blocks))
		}
		for i, b := range t.blocks {
			if (i < t.released) != (b == NoBlock) {
				return fmt.Errorf("seq %d: entry %d is %d with %d released", seq, i, b, t.released)
			}
			if b == NoBlock {
				continue
			}
			if b < 0 || int(b) >= len(m.meta) {
				return fmt.Errorf("seq %d: block %d out of range", seq, b)
			}
			if seen[b] {
				return fmt.Errorf("seq %d: block %d twice in one table", seq, b)
			}
			seen[b] = true
			holders[b]++
		}
		if len(t.hashes) > len(t.blocks) {
			return fmt.Errorf("seq %d: %d hashes for %d blocks", seq, len(t.hashes), len(t.blocks))
		}
	}
	free := 0
	for b, md := range m.meta {
		if md.refs != holders[b] {
			return fmt.Errorf("block %d: refcount %d, held by %d tables", b, md.refs, holders[b])
		}
		if (md.refs == 0) != m.free.in[b] {
			return fmt.Errorf("block %d: refcount %d but in free list = %v", b, md.refs, m.free.in[b])
		}
		if md.refs == 0 {
			free++
		}
		if md.cached {
			if got, ok := m.cache[cacheKey(md.hash)]; !ok || got != BlockID(b) {
				return fmt.Errorf("block %d: marked cached but the map does not point to it", b)
			}
		}
	}
	if free != m.free.n || len(m.free.order()) != free {
		return fmt.Errorf("free list length %d / %d, %d unreferenced blocks", m.free.n, len(m.free.order()), free)
	}
	for k, b := range m.cache {
		if !m.meta[b].cached || cacheKey(m.meta[b].hash) != k {
			return fmt.Errorf("cache map entry for block %d does not match the block", b)
		}
	}
	if !m.prefixCaching && len(m.cache) != 0 {
		return fmt.Errorf("prefix caching off but %d cached blocks", len(m.cache))
	}
	return nil
}

// checkEmpty is check plus: no sequence holds blocks and every block is free (no leaks).
func (m *BlockManager) checkEmpty() error {
	if err := m.check(); err != nil {
		return err
	}
	if len(m.tables) != 0 || m.free.n != len(m.meta) {
		return fmt.Errorf("leak: %d tables, %d of %d blocks free", len(m.tables), m.free.n, len(m.meta))
	}
	return nil
}
