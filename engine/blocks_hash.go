// This file implements automatic prefix caching: a chained hash over full blocks
// (SHA-256 of the parent block's hash, the extra keys and the block's token ids), the lookup of
// a new sequence's longest cached prefix, and Commit, which enters a sequence's newly filled
// blocks into the cache once their KV rows have been computed. Partial blocks are never cached.

package engine

import (
	"crypto/sha256"
	"encoding/binary"
)

// BlockHash identifies the content of a full block together with everything before it.
type BlockHash [sha256.Size]byte

// hashBlock chains parent (zero for the first block) with the extra keys and the block's
// token ids.
func hashBlock(parent BlockHash, tokens []int, extraKeys string) BlockHash {
	// The input of a block of up to 48 tokens without extra keys fits a stack buffer (the
	// usual case: no heap allocation per block).
	var stack [len(BlockHash{}) + 4 + 4*48]byte
	buf := stack[:0]
	if n := len(parent) + 4 + len(extraKeys) + 4*len(tokens); n > len(stack) {
		buf = make([]byte, 0, n)
	}
	buf = append(buf, parent[:]...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(extraKeys)))
	buf = append(buf, extraKeys...)
	for _, t := range tokens {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(int32(t)))
	}
	return sha256.Sum256(buf)
}

// cacheKey is the prefix-cache map's key for h: its first 8 bytes. A block is in the map only
// under its own hash's key, and a lookup hits only when the block's full hash equals the one
// looked up (lookup), so the map's narrower key never lets one prefix's KV rows serve another
// (the full SHA-256 decides). Two hashes sharing a key (about n²/2⁶⁵ for n cached blocks:
// never, in practice) would only leave the second block uncached. The 8-byte key keeps the map
// a third of the size and cheaper to probe than 32-byte keys, which matters when thousands of
// simulated replicas each have one (sim).
func cacheKey(h BlockHash) uint64 { return binary.LittleEndian.Uint64(h[:8]) }

// lookup returns the cached block whose full hash is h.
func (m *BlockManager) lookup(h BlockHash) (BlockID, bool) {
	b, ok := m.cache[cacheKey(h)]
	return b, ok && m.meta[b].hash == h
}

// PrefixCaching reports whether automatic prefix caching is on.
func (m *BlockManager) PrefixCaching() bool { return m.prefixCaching }

// GetComputedBlocks finds the longest run of cached full blocks that starts tokens (a new
// sequence's known token ids) under extraKeys, and the number of tokens they hold. It never
// covers the whole of tokens: the last token is always left to compute, since its logits are
// needed. It changes nothing (Allocate takes the blocks and counts the query).
func (m *BlockManager) GetComputedBlocks(tokens []int, extraKeys string) ([]BlockID, int) {
	return m.computedBlocks(nil, tokens, extraKeys)
}

// computedBlocks is GetComputedBlocks appending the blocks to out[:0] (the scheduler's buffer).
func (m *BlockManager) computedBlocks(out []BlockID, tokens []int, extraKeys string) ([]BlockID, int) {
	out = out[:0]
	if !m.prefixCaching || len(tokens) == 0 {
		return out, 0
	}
	bs := m.blockSizeTokens
	maxBlocks := (len(tokens) - 1) / bs
	var h BlockHash
	for i := range maxBlocks {
		h = hashBlock(h, tokens[i*bs:(i+1)*bs], extraKeys)
		b, ok := m.lookup(h)
		if !ok {
			break
		}
		out = append(out, b)
	}
	return out, len(out) * bs
}

// Commit records that the first numComputedTokens of tokens (seq's known token ids) have their
// KV rows written, so the full blocks among them become prefix-cache entries. A block whose
// hash is already cached under another block stays private (the first copy is the shared one).
func (m *BlockManager) Commit(seq SeqID, tokens []int, numComputedTokens int) {
	t := m.tables[seq]
	if t == nil || !m.prefixCaching {
		return
	}
	bs := m.blockSizeTokens
	numFull := min(numComputedTokens/bs, len(t.blocks))
	for i := len(t.hashes); i < numFull; i++ {
		var parent BlockHash
		if i > 0 {
			parent = t.hashes[i-1]
		}
		h := hashBlock(parent, tokens[i*bs:(i+1)*bs], t.extraKeys)
		t.hashes = append(t.hashes, h)
		b := t.blocks[i]
		if b == NoBlock {
			continue // released before it was committed: nothing to share
		}
		k := cacheKey(h)
		if _, taken := m.cache[k]; taken || m.meta[b].cached {
			continue // a copy is cached (or, never in practice, k is another hash's key)
		}
		m.cache[k] = b
		m.meta[b].cached = true
		m.meta[b].hash = h
	}
}
