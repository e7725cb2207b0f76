// Byte-level BPE encoding (GPT-2 family): each pre-token is spelled with the byte-level runes
// and its characters are merged by merge rank, lowest rank first, ties leftmost. Results per
// pre-token are cached (prose repeats its words), up to wordCacheMax entries.

package tokenizer

import "sync"

// mergeKey is a merge pair; the strings are substrings of the word being merged.
type mergeKey struct{ a, b string }

const wordCacheMax = 1 << 16

// wordCache maps a pre-token to its ids; safe for concurrent use.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int
}

func (c *wordCache) get(w string) ([]int, bool) {
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string][]int{}
	}
	if len(c.m) < wordCacheMax {
		c.m[w] = ids
	}
	c.mu.Unlock()
}

// encodeBPE appends the ids of one text fragment (no special tokens in it).
func (t *Tokenizer) encodeBPE(text string, out []int) []int {
	for _, w := range preSplit(t.stages, text) {
		if ids, ok := t.cache.get(w); ok {
			out = append(out, ids...)
			continue
		}
		n := len(out)
		out = t.encodeWord(byteEncode(w), out)
		t.cache.put(w, append([]int(nil), out[n:]...))
	}
	return out
}

// encodeWord merges one byte-level spelled pre-token.
func (t *Tokenizer) encodeWord(word string, out []int) []int {
	if t.vocab.IgnoreMerges {
		if id, ok := t.ids[word]; ok {
			return append(out, id)
		}
	}
	for _, s := range mergeWord(word, t.mergePrio) {
		piece := word[s.start:s.end]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		// not a token: fall back to single characters (UNK when even those are missing)
		for _, r := range piece {
			if id, ok := t.ids[string(r)]; ok {
				out = append(out, id)
			} else if t.vocab.UNK >= 0 {
				out = append(out, t.vocab.UNK)
			}
		}
	}
	return out
}

// mergePrio is the merge rank of word[s:m]+word[m:e], if that merge exists.
func (t *Tokenizer) mergePrio(word string, s, m, e int) (float64, bool) {
	r, ok := t.ranks[mergeKey{word[s:m], word[m:e]}]
	return float64(r), ok
}
