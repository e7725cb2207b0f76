// This file implements the free block queue: a doubly linked list over block ids (arrays, no
// pointers) holding every block whose reference count is zero. Allocation takes the head;
// freed prefix-cached blocks join the tail, so the head is the least recently freed (the LRU
// eviction order); freed blocks holding nothing reusable join the head, to be taken first.

package engine

type freeList struct {
	// prev and next have numBlocks+1 entries; index numBlocks is the sentinel, so the list is
	// circular and empty when next[sentinel] == sentinel.
	prev, next []int32
	in         []bool
	n          int
}

func newFreeList(numBlocks int) freeList {
	l := freeList{
		prev: make([]int32, numBlocks+1),
		next: make([]int32, numBlocks+1),
		in:   make([]bool, numBlocks),
	}
	s := int32(numBlocks)
	l.prev[s], l.next[s] = s, s
	for b := range numBlocks {
		l.pushBack(BlockID(b))
	}
	return l
}

func (l *freeList) sentinel() int32 { return int32(len(l.in)) }

func (l *freeList) insertAfter(at int32, b BlockID) {
	if l.in[b] {
		panic("engine: block already in the free list")
	}
	nx := l.next[at]
	l.prev[b], l.next[b] = at, nx
	l.next[at], l.prev[nx] = int32(b), int32(b)
	l.in[b] = true
	l.n++
}

func (l *freeList) pushBack(b BlockID)  { l.insertAfter(l.prev[l.sentinel()], b) }
func (l *freeList) pushFront(b BlockID) { l.insertAfter(l.sentinel(), b) }

func (l *freeList) remove(b BlockID) {
	if !l.in[b] {
		panic("engine: block not in the free list")
	}
	p, nx := l.prev[b], l.next[b]
	l.next[p], l.prev[nx] = nx, p
	l.in[b] = false
	l.n--
}

// popFront takes the head (the block to reuse next); ok is false when the list is empty.
func (l *freeList) popFront() (b BlockID, ok bool) {
	h := l.next[l.sentinel()]
	if h == l.sentinel() {
		return 0, false
	}
	l.remove(BlockID(h))
	return BlockID(h), true
}

// order returns the free blocks from head (next to reuse) to tail.
func (l *freeList) order() []BlockID {
	out := make([]BlockID, 0, l.n)
	for b := l.next[l.sentinel()]; b != l.sentinel(); b = l.next[b] {
		out = append(out, BlockID(b))
	}
	return out
}
