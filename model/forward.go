// This file implements the single-sequence forward pass: Forward runs a batch of tokens at
// consecutive positions of one sequence, with its contiguous per-layer f32 KV cache viewed as
// a paged pool of one block of Max positions, through the batched forward of batch.go (the
// compiled graph; logits of the last or of every row).
package model

import (
	"fmt"
)

// Cache is a per-sequence KV cache. K[l] and V[l] are [Max, k] and [Max, v] for layer l
// (Config.CacheDims); rows
// 0..Len-1 hold the keys/values (after RoPE) of the positions processed so far.
type Cache struct {
	K, V [][]float32
	// KQ, VQ hold the rows in the model's KVCacheDType when it is not f32 (K and V's layers
	// are then nil; kvdtype.go).
	KQ, VQ [][]byte
	Len    int // positions filled
	Max    int // capacity in positions

	batch *Batch      // the batched forward's state (compiled graph and its buffers)
	view  PagedKV     // K and V as a pool of one block of Max positions
	seq   [1]BatchSeq // the one sequence of a Forward call
	table [1]int32    // its block table: block 0
}

// NewCache allocates a cache for maxTokens positions.
func (m *Model) NewCache(maxTokens int) *Cache {
	maxTokens = max(maxTokens, 0)
	c := &Cache{Max: maxTokens}
	kd, vd := m.Config.CacheDims()
	c.view = PagedKV{NumBlocks: 1, BlockSize: max(maxTokens, 1), KVDim: kd, VDim: vd}
	if err := c.view.setFormats(m, m.KVCacheDType); err != nil {
		c.view = PagedKV{NumBlocks: 1, BlockSize: max(maxTokens, 1), KVDim: kd, VDim: vd} // SetKVCacheDType checked it
	}
	for range m.Config.Layers {
		c.view.addLayer(maxTokens, false)
	}
	c.K, c.V, c.KQ, c.VQ = c.view.K, c.view.V, c.view.KQ, c.view.VQ
	return c
}

// Decode runs one token at position c.Len and returns its logits ([Vocab]).
func (m *Model) Decode(c *Cache, token int) ([]float32, error) {
	return m.Forward(c, []int{token}, c.Len, false)
}

// Forward processes tokens at positions start..start+n-1 (start <= c.Len; a smaller start
// overwrites and discards cached positions from start on) and leaves c.Len = start+n.
// It returns logits [n, Vocab] when allLogits is set, otherwise only the last row's [Vocab].
func (m *Model) Forward(c *Cache, tokens []int, start int, allLogits bool) ([]float32, error) {
	return m.ForwardTo(nil, c, tokens, start, allLogits)
}

// ForwardTo is Forward writing the logits into dst when it has the capacity (otherwise a new
// slice). With a reused dst and cache, a decode step allocates nothing in the model itself.
func (m *Model) ForwardTo(dst []float32, c *Cache, tokens []int, start int, allLogits bool) ([]float32, error) {
	cfg := &m.Config
	n := len(tokens)
	switch {
	case n == 0:
		return nil, fmt.Errorf("model: forward: no tokens")
	case len(c.K) != cfg.Layers:
		return nil, fmt.Errorf("model: forward: cache has %d layers, model %d", len(c.K), cfg.Layers)
	case start < 0 || start > c.Len:
		return nil, fmt.Errorf("model: forward: start position %d outside the cached 0..%d", start, c.Len)
	case start+n > c.Max:
		return nil, fmt.Errorf("model: forward: positions %d..%d overflow the KV cache of %d", start, start+n-1, c.Max)
	}
	for i, t := range tokens {
		if t < 0 || t >= cfg.Vocab {
			return nil, fmt.Errorf("model: forward: token %d (batch row %d) out of range [0, %d)", t, i, cfg.Vocab)
		}
	}
	c.Len = start // positions >= start are rewritten below; keep Len honest on error
	if c.batch == nil {
		c.batch = &Batch{}
	}
	kd, vd := cfg.CacheDims()
	c.view = PagedKV{K: c.K, V: c.V, KQ: c.KQ, VQ: c.VQ, KFmt: c.view.KFmt, VFmt: c.view.VFmt, NumBlocks: 1, BlockSize: c.Max, KVDim: kd, VDim: vd}
	c.seq[0] = BatchSeq{Tokens: tokens, StartPos: start, BlockTable: c.table[:], NeedsLogits: true, allLogits: allLogits}
	logits, err := m.forwardBatch(dst, true, c.batch, &c.view, c.seq[:])
	c.seq[0].Tokens = nil // do not keep the caller's slice
	if err != nil {
		return nil, err
	}
	c.Len = start + n
	return logits, nil
}
