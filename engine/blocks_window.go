// This file implements the block manager's half of sliding-window attention: a windowed KV
// group's sequence releases the blocks that lie wholly before its window (ReleaseBefore),
// keeping its table's length and positions; a released entry becomes NoBlock. A released
// block that the prefix cache holds stays cached (reusable by a later prefix hit until it is
// evicted), as when a sequence finishes.

package engine

import "fmt"

// NoBlock marks a released entry of a windowed group's block table: its positions are before
// every window still to be computed, and no kernel reads them.
const NoBlock BlockID = -1

// ReleaseBefore releases seq's blocks that hold only positions before pos (the first position
// any later row of seq attends to), oldest first. Their entries become NoBlock.
func (m *BlockManager) ReleaseBefore(seq SeqID, pos int) {
	t := m.tables[seq]
	if t == nil {
		panic(fmt.Sprintf("engine: ReleaseBefore: sequence %d holds no blocks", seq))
	}
	n := min(pos/m.blockSizeTokens, len(t.blocks))
	for i := t.released; i < n; i++ {
		if b := t.blocks[i]; b != NoBlock {
			m.release(b)
			t.blocks[i] = NoBlock
		}
	}
	t.released = max(t.released, n)
}

// NumHeldBlocks counts the blocks seq's table holds (released entries not counted).
func (m *BlockManager) NumHeldBlocks(seq SeqID) int {
	t := m.tables[seq]
	if t == nil {
		return 0
	}
	return len(t.blocks) - t.released
}

// NumHeldBlocksAll sums NumHeldBlocks over every sequence (blocks shared by prefix caching
// count once per table).
func (m *BlockManager) NumHeldBlocksAll() int {
	n := 0
	for _, t := range m.tables {
		n += len(t.blocks) - t.released
	}
	return n
}

// CanAppendSlots reports whether AppendSlots(seq, numTokens) would succeed.
func (m *BlockManager) CanAppendSlots(seq SeqID, numTokens int) bool {
	t := m.tables[seq]
	if t == nil {
		panic(fmt.Sprintf("engine: CanAppendSlots: sequence %d holds no blocks", seq))
	}
	return m.blocksFor(numTokens)-len(t.blocks) <= m.free.n
}
