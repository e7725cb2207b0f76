// This file implements Truncate, the block manager's half of speculative decoding's rollback:
// after a verification rejected some draft tokens, the blocks that held only rejected
// positions go back to the free list (a partly used block stays: its rejected slots are
// overwritten when the sequence gets there again).

package engine

import "fmt"

// Truncate shrinks seq's block table to the blocks that hold its first numTokens token slots,
// releasing the rest (tail first). Blocks past numTokens are never prefix-cached, since Commit
// only caches computed tokens, but a released block's hash, if any, is dropped from the
// sequence's chain. It is a no-op when the table is already that short.
func (m *BlockManager) Truncate(seq SeqID, numTokens int) {
	t := m.tables[seq]
	if t == nil {
		panic(fmt.Sprintf("engine: Truncate: sequence %d holds no blocks", seq))
	}
	if numTokens < 0 {
		panic(fmt.Sprintf("engine: Truncate(%d, %d): negative length", seq, numTokens))
	}
	keep := max(m.blocksFor(numTokens), t.released)
	for i := len(t.blocks) - 1; i >= keep; i-- {
		m.release(t.blocks[i])
	}
	if keep < len(t.blocks) {
		t.blocks = t.blocks[:keep]
	}
	if keep < len(t.hashes) {
		t.hashes = t.hashes[:keep]
	}
}
