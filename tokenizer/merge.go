// The shared merge loop of both BPE kinds: a word starts as one symbol per character, and the
// best adjacent pair (by a caller-supplied priority) is merged until no pair qualifies. A
// min-heap holds candidate pairs; stale entries are skipped when popped.

package tokenizer

import "container/heap"

// symbol is one current segment [start,end) of the word; prev/next link live symbols.
type symbol struct {
	start, end int
	prev, next int
}

// pair is a merge candidate of symbols left and right; lower prio merges first, ties leftmost.
type pair struct {
	left, right int
	prio        float64
	size        int // byte length of the merged text, to detect stale entries
}

type pairHeap []pair

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio < h[j].prio
	}
	return h[i].left < h[j].left
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeWord splits word into characters and merges pairs. prio(word, s, m, e) returns the
// priority of merging word[s:m] with word[m:e] and whether they may merge at all. It returns
// the final symbols in order.
func mergeWord(word string, prio func(word string, s, m, e int) (float64, bool)) []symbol {
	syms := make([]symbol, 0, len(word))
	for i := 0; i < len(word); {
		n := utf8Len(word[i])
		if i+n > len(word) {
			n = len(word) - i
		}
		syms = append(syms, symbol{start: i, end: i + n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	if len(syms) == 0 {
		return nil
	}
	syms[len(syms)-1].next = -1
	h := &pairHeap{}
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		s, m, e := syms[l].start, syms[r].start, syms[r].end
		if p, ok := prio(word, s, m, e); ok {
			heap.Push(h, pair{left: l, right: r, prio: p, size: e - s})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for h.Len() > 0 {
		p := heap.Pop(h).(pair)
		l, r := &syms[p.left], &syms[p.right]
		if l.start == l.end || r.start == r.end || l.next != p.right || (r.end-l.start) != p.size {
			continue
		}
		l.end = r.end
		r.start = r.end
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = p.left
		}
		try(l.prev, p.left)
		try(p.left, l.next)
	}
	out := make([]symbol, 0, len(syms))
	for i := 0; i >= 0; i = syms[i].next {
		out = append(out, syms[i])
	}
	return out
}

// utf8Len is the length of the UTF-8 sequence a lead byte announces (1 for stray bytes),
// as llama.cpp's unicode_len_utf8.
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	}
	return 4
}
