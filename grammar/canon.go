// This file names lexer states and terminal sets the same way in every grammar, so the mask
// walks of one grammar serve every other with the same terminals (a JSON string's body is the
// same regex in most schemas): a terminal is named by its kind and text, an NFA node by its
// terminal's name and its offset among that terminal's nodes (Compile builds a terminal's nodes
// the same way every time), a DFA state by the sorted names of its nodes.

package grammar

import (
	"encoding/binary"
	"slices"
	"strings"
)

type canonPair struct {
	key string
	off int32
}

// canon returns d's grammar-independent name (computed once).
func (l *lexer) canon(d *dstate) string {
	if c := d.canon.Load(); c != nil {
		return *c
	}
	n := l.nfa
	pairs := make([]canonPair, len(d.core))
	for i, v := range d.core {
		t := n.nodeTerm[v]
		pairs[i] = canonPair{n.keys[t], v - n.first[t]}
	}
	slices.SortFunc(pairs, func(a, b canonPair) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return int(a.off - b.off)
	})
	var b []byte
	for i, p := range pairs {
		if i == 0 || p.key != pairs[i-1].key {
			b = binary.AppendUvarint(b, uint64(len(p.key))+1)
			b = append(b, p.key...)
		}
		b = binary.AppendUvarint(b, 0)
		b = binary.AppendUvarint(b, uint64(p.off))
	}
	s := string(b)
	d.canon.Store(&s)
	return s
}

// accKey returns the grammar-independent name of terminal set accID.
func (l *lexer) accKey(accID int32) string {
	bits := l.accBits(accID)
	var keys []string
	for t := range int32(len(l.nfa.keys)) {
		if bits[t>>6]>>(t&63)&1 != 0 {
			keys = append(keys, l.nfa.keys[t])
		}
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return string(b)
}

// localAcc returns this grammar's accID for a terminal set named by accKey (-1: a terminal
// this grammar does not have, which cannot happen for sets read from its own states).
func (l *lexer) localAcc(key string) int32 {
	var ids []int32
	for len(key) > 0 {
		n, k := binary.Uvarint([]byte(key[:min(len(key), 10)]))
		name := key[k : k+int(n)]
		key = key[k+int(n):]
		t, ok := l.byKey[name]
		if !ok {
			return -1
		}
		ids = append(ids, t)
	}
	slices.Sort(ids)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accID(ids)
}
