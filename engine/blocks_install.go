// This file implements InstallCached: prefix-cache entries whose KV rows come from elsewhere
// (another engine's ExportKV) rather than from a sequence's Commit.

package engine

import "errors"

// InstallCached enters the first n full blocks of tokens (under extraKeys) into the prefix
// cache, calling write(b, i) to fill block b with block i's rows. A block whose hash is cached
// already is kept and not written. The installed blocks end with no reference, cached, at the
// free list's tail (as a finished sequence leaves its blocks), so the next lookup of the prompt
// hits them and nothing holds them if none does. It never installs the block of the prompt's
// last token (whose logits must be computed), never evicts a block it installed itself, and
// stops at the first block it cannot take or write. It returns how many leading blocks of the
// prompt the cache holds after it.
func (m *BlockManager) InstallCached(tokens []int, extraKeys string, n int, write func(b BlockID, i int) error) (int, error) {
	if !m.prefixCaching {
		return 0, errors.New("engine: installing KV blocks needs prefix caching")
	}
	if len(tokens) == 0 {
		return 0, nil
	}
	bs := m.blockSizeTokens
	n = min(n, (len(tokens)-1)/bs)
	room := m.free.n // the free list cycles once through the installed blocks after this many
	var h BlockHash
	for i := range n {
		h = hashBlock(h, tokens[i*bs:(i+1)*bs], extraKeys)
		if _, taken := m.cache[cacheKey(h)]; taken {
			continue // cached already (or, never in practice, its key is another hash's: left out)
		}
		if room == 0 {
			return i, nil
		}
		room--
		b := m.takeFree()
		if err := write(b, i); err != nil {
			m.release(b) // uncached: back to the head, reused first
			return i, err
		}
		m.meta[b].cached, m.meta[b].hash = true, h
		m.cache[cacheKey(h)] = b
		m.release(b)
	}
	return n, nil
}
