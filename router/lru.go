// blockLRU: a fixed-capacity set of block hashes with least-recently-used eviction, the
// prefix policy's approximate picture of one backend's prefix cache. Nodes live in one slice
// linked by index, so a full table adds and evicts without allocating.

package router

type lruNode struct {
	key        uint64
	prev, next int32 // -1: none
}

type blockLRU struct {
	capacity   int
	index      map[uint64]int32
	nodes      []lruNode
	head, tail int32 // most and least recently used; -1 when empty
}

func newBlockLRU(capacity int) *blockLRU {
	return &blockLRU{capacity: max(capacity, 1), index: map[uint64]int32{}, head: -1, tail: -1}
}

// Len is the number of hashes held.
func (l *blockLRU) Len() int { return len(l.index) }

// Has reports whether key is held, without touching it.
func (l *blockLRU) Has(key uint64) bool {
	_, ok := l.index[key]
	return ok
}

// Touch makes key the most recently used, adding it (and evicting the least recently used
// when full) if absent.
func (l *blockLRU) Touch(key uint64) {
	if i, ok := l.index[key]; ok {
		l.unlink(i)
		l.pushFront(i)
		return
	}
	var i int32
	if len(l.nodes) < l.capacity {
		l.nodes = append(l.nodes, lruNode{})
		i = int32(len(l.nodes) - 1)
	} else {
		i = l.tail
		l.unlink(i)
		delete(l.index, l.nodes[i].key)
	}
	l.nodes[i].key = key
	l.index[key] = i
	l.pushFront(i)
}

func (l *blockLRU) unlink(i int32) {
	n := &l.nodes[i]
	if n.prev >= 0 {
		l.nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next >= 0 {
		l.nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

func (l *blockLRU) pushFront(i int32) {
	n := &l.nodes[i]
	n.prev, n.next = -1, l.head
	if l.head >= 0 {
		l.nodes[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}
