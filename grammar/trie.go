// This file builds a Vocab's token trie once: the tokens' byte strings as a flat array of
// nodes in depth-first order, each with its byte, depth, the index just past its subtree (so a
// walk that rejects a prefix skips every token under it in one step) and the token ending
// there. EOS tokens and tokens without bytes are left out (the mask handles them apart).

package grammar

import (
	"bytes"
	"slices"
)

type tnode struct {
	skip  int32  // index of the first node after this subtree
	tok   int32  // token ending here (-1: none)
	depth uint16 // 0 for the root
	h     uint16 // length of the longest path below
	b     byte
	dup   bool  // trie.dups has further tokens with the same bytes
	desc  uint8 // byte groups (byteGroup) of every node below this one
	utf8  uint8 // UTF-8 decoder states (utf8Step) from which every path below is valid UTF-8 so far
}

// utf8Step is a UTF-8 validating automaton over bytes: state 0 is a character boundary, 1-3
// expect that many continuation bytes, 4-7 the restricted second bytes after E0, ED, F0 and F4.
// It returns -1 for a byte that cannot come next.
func utf8Step(s int, b byte) int {
	switch s {
	case 0:
		switch {
		case b < 0x80:
			return 0
		case b >= 0xC2 && b <= 0xDF:
			return 1
		case b == 0xE0:
			return 4
		case b == 0xED:
			return 5
		case b >= 0xE1 && b <= 0xEF:
			return 2
		case b == 0xF0:
			return 6
		case b >= 0xF1 && b <= 0xF3:
			return 3
		case b == 0xF4:
			return 7
		}
		return -1
	case 4:
		if b >= 0xA0 && b <= 0xBF {
			return 1
		}
	case 5:
		if b >= 0x80 && b <= 0x9F {
			return 1
		}
	case 6:
		if b >= 0x90 && b <= 0xBF {
			return 2
		}
	case 7:
		if b >= 0x80 && b <= 0x8F {
			return 2
		}
	default:
		if b >= 0x80 && b <= 0xBF {
			return s - 1
		}
	}
	return -1
}

// Byte groups summarise a subtree's bytes: a walk whose DFA state loops on every group below a
// node allows that node's whole subtree at once.
const nGroups = 8

func byteGroup(b byte) uint8 {
	switch {
	case b >= 0x80:
		return 1 << 7
	case b == '"':
		return 1 << 4
	case b == '\\':
		return 1 << 5
	case b < 0x20 || b == 0x7f:
		return 1 << 6
	case b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z':
		return 1 << 0
	case b >= '0' && b <= '9':
		return 1 << 1
	case b == ' ':
		return 1 << 2
	}
	return 1 << 3
}

type trie struct {
	nodes    []tnode
	dups     map[int32][]int32 // node -> further tokens with the same bytes
	maxDepth int
	eos      []uint64    // bitset of EOS ids
	kids     [][4]uint64 // per node: the bytes of its children
	tokPos   []int32     // per node (and one past the end): index in tokList of its first token
	tokList  []int32     // tokens in depth-first order of their nodes
	all      []uint64    // bitset of the tokens in tokList
}

func (v *Vocab) getTrie() *trie {
	v.once.Do(func() { v.trie = buildTrie(v.tokens, v.eos) })
	return v.trie
}

func buildTrie(tokens [][]byte, eos []int) *trie {
	t := &trie{eos: make([]uint64, (len(tokens)+63)/64), dups: map[int32][]int32{}}
	for _, e := range eos {
		if e >= 0 && e < len(tokens) {
			t.eos[e/64] |= 1 << (e % 64)
		}
	}
	ids := make([]int32, 0, len(tokens))
	for i, b := range tokens {
		if len(b) > 0 && t.eos[i/64]>>(i%64)&1 == 0 {
			ids = append(ids, int32(i))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(tokens[a], tokens[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	t.nodes = append(t.nodes, tnode{tok: -1})
	var path []int32 // node index per depth (path[0] = root)
	path = append(path, 0)
	var prev []byte
	for _, id := range ids {
		s := tokens[id]
		// common prefix with the previous token: those nodes exist
		c := 0
		for c < len(prev) && c < len(s) && prev[c] == s[c] {
			c++
		}
		// close nodes deeper than c
		for d := len(path) - 1; d > c; d-- {
			t.nodes[path[d]].skip = int32(len(t.nodes))
		}
		path = path[:c+1]
		for d := c; d < len(s); d++ {
			t.nodes = append(t.nodes, tnode{tok: -1, depth: uint16(d + 1), b: s[d]})
			path = append(path, int32(len(t.nodes)-1))
		}
		last := path[len(s)]
		if t.nodes[last].tok < 0 {
			t.nodes[last].tok = id
		} else {
			t.dups[last] = append(t.dups[last], id)
			t.nodes[last].dup = true
		}
		t.maxDepth = max(t.maxDepth, len(s))
		prev = s
	}
	for d := len(path) - 1; d >= 0; d-- {
		t.nodes[path[d]].skip = int32(len(t.nodes))
	}
	// descendants' byte groups, children before parents (they come later in the array)
	for i := len(t.nodes) - 1; i >= 0; i-- {
		nd := &t.nodes[i]
		nd.utf8 = 0xFF
		for c := int32(i + 1); c < nd.skip; c = t.nodes[c].skip {
			cn := &t.nodes[c]
			nd.desc |= cn.desc | byteGroup(cn.b)
			nd.h = max(nd.h, cn.h+1)
			var ok uint8
			for st := range 8 {
				if n := utf8Step(st, cn.b); n >= 0 && cn.utf8>>n&1 != 0 {
					ok |= 1 << st
				}
			}
			nd.utf8 &= ok
		}
	}
	t.kids = make([][4]uint64, len(t.nodes))
	for i := range t.nodes {
		for c := int32(i + 1); c < t.nodes[i].skip; c = t.nodes[c].skip {
			b := t.nodes[c].b
			t.kids[i][b>>6] |= 1 << (b & 63)
		}
	}
	t.tokPos = make([]int32, len(t.nodes)+1)
	for i, nd := range t.nodes {
		t.tokPos[i] = int32(len(t.tokList))
		if nd.tok >= 0 {
			t.tokList = append(t.tokList, nd.tok)
			t.tokList = append(t.tokList, t.dups[int32(i)]...)
		}
	}
	t.tokPos[len(t.nodes)] = int32(len(t.tokList))
	t.all = make([]uint64, len(t.eos))
	for _, k := range t.tokList {
		t.all[k>>6] |= 1 << (k & 63)
	}
	return t
}
