// This file implements the block manager: the KV cache as numBlocks fixed-size blocks of
// blockSizeTokens token slots, per-sequence block tables, reference counts and the free list.
// Prefix caching (blocks_hash.go) lets sequences share full blocks; a block is then referenced
// by every table that holds it and, at reference count zero, stays reusable until evicted.
//
// State machine of one block:
//
//	free (refs 0, uncached) --allocate--> referenced (refs >= 1)
//	referenced --Commit fills it, prefix caching on--> referenced + cached (hash in the map)
//	referenced + cached --last table frees it--> cached, refs 0, in the free list (LRU tail)
//	cached, refs 0 --prefix hit--> referenced + cached (taken out of the free list)
//	cached, refs 0 --reached the free-list head, allocated--> evicted: hash dropped, referenced
//	referenced, uncached --last table frees it--> free (free-list head: reused first)

package engine

import "fmt"

// BlockID names one block of the KV cache, 0 <= id < numBlocks.
type BlockID int32

// BlockStats counts prefix-cache use: queried and hit tokens (one query per admitted
// sequence, counted by Allocate) and evicted cached blocks.
type BlockStats struct {
	QueryTokens int64
	HitTokens   int64
	Evictions   int64
}

type blockMeta struct {
	refs   int32
	cached bool      // the prefix-cache map holds hash -> this block
	hash   BlockHash // valid when cached
}

type seqTable struct {
	blocks    []BlockID
	hashes    []BlockHash // chained hashes of the first len(hashes) blocks (full, committed)
	extraKeys string
	released  int // the first released entries of blocks are NoBlock (blocks_window.go)
}

// BlockManager owns the KV-cache blocks. It is not safe for concurrent use.
type BlockManager struct {
	blockSizeTokens int
	prefixCaching   bool
	meta            []blockMeta
	free            freeList
	cache           map[uint64]BlockID // cacheKey(hash) -> the cached block (blocks_hash.go)
	tables          map[SeqID]*seqTable
	spare           []*seqTable // freed tables, reused by Allocate (their slices keep their capacity)
	stats           BlockStats
}

// NewBlockManager makes a cache of numBlocks blocks of blockSizeTokens tokens each, all free.
func NewBlockManager(numBlocks, blockSizeTokens int, prefixCaching bool) *BlockManager {
	if numBlocks <= 0 || blockSizeTokens <= 0 {
		panic(fmt.Sprintf("engine: NewBlockManager(%d, %d): sizes must be positive", numBlocks, blockSizeTokens))
	}
	m := &BlockManager{
		blockSizeTokens: blockSizeTokens,
		prefixCaching:   prefixCaching,
		meta:            make([]blockMeta, numBlocks),
		free:            newFreeList(numBlocks),
		cache:           map[uint64]BlockID{},
		tables:          map[SeqID]*seqTable{},
	}
	if prefixCaching {
		m.cache = make(map[uint64]BlockID, numBlocks) // it holds a block at most once: never grows
	}
	return m
}

// BlockSizeTokens is the number of token slots per block.
func (m *BlockManager) BlockSizeTokens() int { return m.blockSizeTokens }

// NumBlocks is the size of the cache in blocks.
func (m *BlockManager) NumBlocks() int { return len(m.meta) }

// NumFreeBlocks counts blocks with no reference (cached ones included: they can be evicted).
func (m *BlockManager) NumFreeBlocks() int { return m.free.n }

// NumCachedBlocks counts blocks in the prefix-cache map (referenced or not).
func (m *BlockManager) NumCachedBlocks() int { return len(m.cache) }

// Usage is the fraction of blocks referenced by some sequence, in [0, 1].
func (m *BlockManager) Usage() float64 {
	return 1 - float64(m.free.n)/float64(len(m.meta))
}

// Stats returns the prefix-cache counters.
func (m *BlockManager) Stats() BlockStats { return m.stats }

// RefCount is the number of block tables holding b.
func (m *BlockManager) RefCount(b BlockID) int { return int(m.meta[b].refs) }

// BlockTable returns a copy of seq's block table (nil when seq holds no blocks).
func (m *BlockManager) BlockTable(seq SeqID) []BlockID {
	t := m.tables[seq]
	if t == nil {
		return nil
	}
	return append([]BlockID(nil), t.blocks...)
}

// appendBlockTable appends seq's block table to dst (the scheduler's plan buffer).
func (m *BlockManager) appendBlockTable(dst []BlockID, seq SeqID) []BlockID {
	if t := m.tables[seq]; t != nil {
		dst = append(dst, t.blocks...)
	}
	return dst
}

// FreeOrder returns the free blocks in the order they will be reused (first = next).
func (m *BlockManager) FreeOrder() []BlockID { return m.free.order() }

func (m *BlockManager) blocksFor(numTokens int) int {
	return (numTokens + m.blockSizeTokens - 1) / m.blockSizeTokens
}

// CanAllocate reports whether a new sequence reusing the computed blocks (from
// GetComputedBlocks) can get slots for numTokens tokens in total.
func (m *BlockManager) CanAllocate(numTokens int, computed []BlockID) bool {
	need := max(m.blocksFor(numTokens)-len(computed), 0)
	for _, b := range computed {
		if m.meta[b].refs == 0 {
			need++ // taking it out of the free list costs a free block
		}
	}
	return need <= m.free.n
}

// Allocate gives seq, which must hold no blocks yet, a block table for numTokens tokens: the
// computed prefix blocks (from GetComputedBlocks, with the same tokens and extraKeys) first,
// then fresh blocks. It is all or nothing: false (and no change) when blocks are short.
// tokens are all of seq's known token ids; extraKeys (cache salt, adapter id ...) separate
// otherwise equal prefixes and are kept for the sequence's later Commit calls.
func (m *BlockManager) Allocate(seq SeqID, tokens []int, numTokens int, computed []BlockID, extraKeys string) bool {
	if m.tables[seq] != nil {
		panic(fmt.Sprintf("engine: Allocate: sequence %d already holds blocks", seq))
	}
	if len(computed) > 0 && len(computed)*m.blockSizeTokens >= numTokens {
		panic("engine: Allocate: computed blocks cover every token")
	}
	if !m.CanAllocate(numTokens, computed) {
		return false
	}
	t := m.newTable(extraKeys)
	for _, b := range computed {
		if m.meta[b].refs == 0 {
			m.free.remove(b)
		}
		m.meta[b].refs++
		t.blocks = append(t.blocks, b)
		t.hashes = append(t.hashes, m.meta[b].hash)
	}
	for len(t.blocks) < m.blocksFor(numTokens) {
		t.blocks = append(t.blocks, m.takeFree())
	}
	m.tables[seq] = t
	if m.prefixCaching {
		m.stats.QueryTokens += int64(len(tokens))
		m.stats.HitTokens += int64(len(computed) * m.blockSizeTokens)
	}
	return true
}

// AppendSlots grows seq's block table to hold numTokens tokens in total. It is all or
// nothing: false (and no change) when free blocks are short.
func (m *BlockManager) AppendSlots(seq SeqID, numTokens int) bool {
	t := m.tables[seq]
	if t == nil {
		panic(fmt.Sprintf("engine: AppendSlots: sequence %d holds no blocks", seq))
	}
	need := m.blocksFor(numTokens) - len(t.blocks)
	if need > m.free.n {
		return false
	}
	for range need {
		t.blocks = append(t.blocks, m.takeFree())
	}
	return true
}

// takeFree pops the free-list head; a cached block is evicted from the prefix cache.
func (m *BlockManager) takeFree() BlockID {
	b, ok := m.free.popFront()
	if !ok {
		panic("engine: no free block (caller must check first)")
	}
	md := &m.meta[b]
	if md.cached {
		delete(m.cache, cacheKey(md.hash))
		md.cached = false
		md.hash = BlockHash{}
		m.stats.Evictions++
	}
	md.refs = 1
	return b
}

// Free drops seq's block table. Blocks whose count reaches zero join the free list, tail block
// first, so that a sequence's tail blocks are evicted before its (more shareable) head blocks.
func (m *BlockManager) Free(seq SeqID) {
	t := m.tables[seq]
	if t == nil {
		return
	}
	delete(m.tables, seq)
	for i := len(t.blocks) - 1; i >= t.released; i-- {
		m.release(t.blocks[i])
	}
	m.spare = append(m.spare, t) // nothing else holds t: BlockTable returns copies
}

// newTable is an empty table for Allocate, a freed one when there is one.
func (m *BlockManager) newTable(extraKeys string) *seqTable {
	n := len(m.spare)
	if n == 0 {
		return &seqTable{extraKeys: extraKeys}
	}
	t := m.spare[n-1]
	m.spare = m.spare[:n-1]
	*t = seqTable{blocks: t.blocks[:0], hashes: t.hashes[:0], extraKeys: extraKeys}
	return t
}

// release drops one table's reference to b; at zero b joins the free list (a cached block at
// the tail, to stay reusable as long as possible; an uncached one at the head).
func (m *BlockManager) release(b BlockID) {
	md := &m.meta[b]
	md.refs--
	if md.refs > 0 {
		return
	}
	if md.cached {
		m.free.pushBack(b)
	} else {
		m.free.pushFront(b)
	}
}
