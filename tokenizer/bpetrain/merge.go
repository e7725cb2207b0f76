// This file implements the merge loop of BPE training: every word (pre-token) is a sequence of
// symbols, starting from its bytes; the adjacent pair with the highest count (summed over
// words, weighted by word frequency) is merged into a new symbol, and only the words that hold
// the pair are rewritten. Pair counts are kept incrementally: a rewritten word's old pairs are
// subtracted and its new ones added. The best pair comes from a max-heap with lazy deletion:
// counts only ever grow for pairs that contain the new symbol (those are pushed afresh), so a
// popped entry whose count is out of date is re-pushed with the current count.
//
// Ties are broken by the pair's text: the pair whose left symbol's bytes sort first, then the
// right symbol's, so the result depends on nothing but the word counts.

package bpetrain

import (
	"container/heap"
	"sort"
)

// pairKey packs a (left, right) symbol pair.
type pairKey uint64

func pairOf(a, b int32) pairKey         { return pairKey(uint64(uint32(a))<<32 | uint64(uint32(b))) }
func (p pairKey) split() (int32, int32) { return int32(uint32(p >> 32)), int32(uint32(p)) }

type word struct {
	syms []int32 // symbol ids
	freq int64
}

// merger holds the training state; symbols are ids into syms (their byte strings).
type merger struct {
	syms   []string         // symbol id -> bytes
	ids    map[string]int32 // bytes -> symbol id
	words  []word
	counts map[pairKey]int64
	where  map[pairKey][]int32 // words that hold (or held) the pair
	heap   pairHeap
	seen   []int // per word: last merge that rewrote it
}

type heapEntry struct {
	count int64
	pair  pairKey
}

type pairHeap struct {
	e    []heapEntry
	syms *[]string
}

func (h *pairHeap) Len() int { return len(h.e) }
func (h *pairHeap) Less(i, j int) bool {
	a, b := h.e[i], h.e[j]
	if a.count != b.count {
		return a.count > b.count
	}
	al, ar := a.pair.split()
	bl, br := b.pair.split()
	s := *h.syms
	if s[al] != s[bl] {
		return s[al] < s[bl]
	}
	return s[ar] < s[br]
}
func (h *pairHeap) Swap(i, j int) { h.e[i], h.e[j] = h.e[j], h.e[i] }
func (h *pairHeap) Push(x any)    { h.e = append(h.e, x.(heapEntry)) }
func (h *pairHeap) Pop() any {
	x := h.e[len(h.e)-1]
	h.e = h.e[:len(h.e)-1]
	return x
}

// newMerger starts from the 256 single bytes (symbol id = byte value) and the words, in a
// fixed order (sorted by text).
func newMerger(counts map[string]int64) *merger {
	m := &merger{ids: map[string]int32{}, counts: map[pairKey]int64{}, where: map[pairKey][]int32{}}
	m.heap.syms = &m.syms
	for b := range 256 {
		m.syms = append(m.syms, string([]byte{byte(b)}))
		m.ids[m.syms[b]] = int32(b)
	}
	texts := make([]string, 0, len(counts))
	for w := range counts {
		texts = append(texts, w)
	}
	sort.Strings(texts)
	m.words = make([]word, len(texts))
	m.seen = make([]int, len(texts))
	for i, t := range texts {
		syms := make([]int32, len(t))
		for j := range len(t) {
			syms[j] = int32(t[j])
		}
		m.words[i] = word{syms: syms, freq: counts[t]}
		m.addPairs(int32(i), -1)
	}
	for p, n := range m.counts {
		m.heap.e = append(m.heap.e, heapEntry{n, p})
	}
	heap.Init(&m.heap)
	return m
}

// addPairs adds word w's pairs to the counts; pairs holding symbol fresh (or all pairs, when
// fresh is -1) also record w in where.
func (m *merger) addPairs(w int32, fresh int32) {
	wd := &m.words[w]
	for i := 0; i+1 < len(wd.syms); i++ {
		a, b := wd.syms[i], wd.syms[i+1]
		p := pairOf(a, b)
		m.counts[p] += wd.freq
		if fresh < 0 || a == fresh || b == fresh {
			if ws := m.where[p]; len(ws) == 0 || ws[len(ws)-1] != w {
				m.where[p] = append(ws, w)
			}
		}
	}
}

// subPairs removes word w's pairs from the counts.
func (m *merger) subPairs(w int32) {
	wd := &m.words[w]
	for i := 0; i+1 < len(wd.syms); i++ {
		p := pairOf(wd.syms[i], wd.syms[i+1])
		if m.counts[p] -= wd.freq; m.counts[p] <= 0 {
			delete(m.counts, p)
		}
	}
}

// best pops the pair with the highest current count (ties as documented above); ok is false
// when no pair is left.
func (m *merger) best() (pairKey, int64, bool) {
	for m.heap.Len() > 0 {
		e := heap.Pop(&m.heap).(heapEntry)
		cur := m.counts[e.pair]
		if cur == e.count {
			return e.pair, cur, true
		}
		if cur > 0 {
			heap.Push(&m.heap, heapEntry{cur, e.pair})
		}
	}
	return 0, 0, false
}

// merge replaces every occurrence of pair p (left to right, not overlapping) by its merged
// symbol and returns that symbol's id (an existing id when the bytes are already a symbol).
// step numbers the merge (from 1).
func (m *merger) merge(p pairKey, step int) int32 {
	a, b := p.split()
	text := m.syms[a] + m.syms[b]
	c, ok := m.ids[text]
	if !ok {
		c = int32(len(m.syms))
		m.syms = append(m.syms, text)
		m.ids[text] = c
	}
	var touched []int32
	for _, w := range m.where[p] {
		if m.seen[w] == step {
			continue
		}
		m.seen[w] = step
		wd := &m.words[w]
		if !holds(wd.syms, a, b) {
			continue // the pair was merged away by an earlier merge
		}
		m.subPairs(w)
		out := wd.syms[:0]
		for i := 0; i < len(wd.syms); i++ {
			if i+1 < len(wd.syms) && wd.syms[i] == a && wd.syms[i+1] == b {
				out = append(out, c)
				i++
			} else {
				out = append(out, wd.syms[i])
			}
		}
		wd.syms = out
		m.addPairs(w, c)
		touched = append(touched, w)
	}
	delete(m.where, p)
	delete(m.counts, p)
	// pairs with c are the only ones whose counts grew
	pushed := map[pairKey]bool{}
	for _, w := range touched {
		syms := m.words[w].syms
		for i := 0; i+1 < len(syms); i++ {
			q := pairOf(syms[i], syms[i+1])
			if (syms[i] == c || syms[i+1] == c) && !pushed[q] {
				pushed[q] = true
				heap.Push(&m.heap, heapEntry{m.counts[q], q})
			}
		}
	}
	return c
}

func holds(syms []int32, a, b int32) bool {
	for i := 0; i+1 < len(syms); i++ {
		if syms[i] == a && syms[i+1] == b {
			return true
		}
	}
	return false
}
