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
	tok   int32  // token ending here (-1: none; see trie.dups for more than one)
	depth uint16 // 0 for the root
	b     byte
}

type trie struct {
	nodes    []tnode
	dups     map[int32][]int32 // node -> further tokens with the same bytes
	maxDepth int
	eos      []uint64 // bitset of EOS ids
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
		}
		t.maxDepth = max(t.maxDepth, len(s))
		prev = s
	}
	for d := len(path) - 1; d >= 0; d-- {
		t.nodes[path[d]].skip = int32(len(t.nodes))
	}
	return t
}
