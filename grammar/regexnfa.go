// This file compiles the grammar's terminals (literal strings and regular expressions) into one
// byte-level NFA: every node either consumes one byte in a range, forks (epsilon moves) or
// marks the end of a terminal. Unicode classes are expanded to UTF-8 byte sequences, so a
// regular expression matches valid UTF-8 only (surrogates excluded), as Go's regexp does on
// valid text. The lazy DFA in lexer.go runs over this NFA.

package grammar

import (
	"encoding/binary"
	"fmt"
	"regexp/syntax"
	"unicode"
)

const (
	nByte   uint8 = iota // consumes one byte in [lo, hi], then out
	nEps                 // epsilon moves to outs
	nMatch               // terminal term ends here
	nAssert              // an anchor (lo: aBeginText, aBeginLine, aEndText), then out
)

const (
	aBeginText = iota
	aBeginLine
	aEndText
)

type nnode struct {
	kind   uint8
	lo, hi byte
	out    int32
	term   int32
	outs   []int32
}

// nfa holds the nodes of every terminal; starts[t] is terminal t's entry.
type nfa struct {
	nodes  []nnode
	starts []int32
	max    int // node cap (from Limits)
	live   []bool
	// canonical names: keys[t] names terminal t the same way in every grammar (its kind and
	// text); first[t] is its first node and nodeTerm[v] the terminal node v belongs to, so a
	// node is (keys[t], v-first[t]) whatever grammar it is in
	keys     []string
	first    []int32
	nodeTerm []int32
	// memo shares the nodes of a repeated or class sub-expression compiled twice before the
	// same continuation within one regex (a key regex that excludes property names has a copy
	// of "any character*" after each name prefix): one copy makes one DFA state, not many
	memo    map[nfaMemoKey]int32
	memoBuf []byte
}

type nfaMemoKey struct {
	re   string
	next int32
}

// memoMaxLen bounds the key of a sub-expression worth remembering.
const memoMaxLen = 1 << 10

// reKey appends a structural key of re to b (false: over memoMaxLen bytes).
func reKey(re *syntax.Regexp, b []byte) ([]byte, bool) {
	b = append(b, byte(re.Op), byte(re.Flags), byte(re.Flags>>8), byte(len(re.Sub)))
	b = binary.AppendVarint(b, int64(re.Min))
	b = binary.AppendVarint(b, int64(re.Max))
	b = binary.AppendUvarint(b, uint64(len(re.Rune)))
	for _, r := range re.Rune {
		b = binary.AppendUvarint(b, uint64(r))
	}
	if len(b) > memoMaxLen {
		return b, false
	}
	for _, s := range re.Sub {
		var ok bool
		if b, ok = reKey(s, b); !ok {
			return b, false
		}
	}
	return b, true
}

// named records the key of the terminal just added, whose nodes start at first.
func (n *nfa) named(key string, first int32) {
	n.keys = append(n.keys, key)
	n.first = append(n.first, first)
	for len(n.nodeTerm) < len(n.nodes) {
		n.nodeTerm = append(n.nodeTerm, int32(len(n.keys)-1))
	}
}

var errNFASize = fmt.Errorf("the lexer's automaton is over Limits.MaxLexerBytes")

func (n *nfa) add(x nnode) (int32, error) {
	if len(n.nodes) >= n.max {
		return 0, errNFASize
	}
	n.nodes = append(n.nodes, x)
	return int32(len(n.nodes) - 1), nil
}

// addLiteral adds a terminal matching exactly the bytes of s.
func (n *nfa) addLiteral(s string) (int32, error) {
	t := int32(len(n.starts))
	next, err := n.add(nnode{kind: nMatch, term: t})
	if err != nil {
		return 0, err
	}
	for i := len(s) - 1; i >= 0; i-- {
		if next, err = n.add(nnode{kind: nByte, lo: s[i], hi: s[i], out: next}); err != nil {
			return 0, err
		}
	}
	n.starts = append(n.starts, next)
	return t, nil
}

// addRegex adds a terminal matching the whole-string language of pattern.
func (n *nfa) addRegex(pattern string) (int32, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, fmt.Errorf("grammar: regex %q: %v", pattern, err)
	}
	t := int32(len(n.starts))
	m, err := n.add(nnode{kind: nMatch, term: t})
	if err != nil {
		return 0, fmt.Errorf("grammar: regex %q: %v", pattern, err)
	}
	clear(n.memo)
	start, err := n.compile(re, m)
	if err != nil {
		return 0, fmt.Errorf("grammar: regex %q: %v", pattern, err)
	}
	n.starts = append(n.starts, start)
	return t, nil
}

// compile adds the nodes of re followed by next and returns re's entry; a repeat or class
// already compiled before next (in this regex) is reused.
func (n *nfa) compile(re *syntax.Regexp, next int32) (int32, error) {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat, syntax.OpCharClass:
		b, ok := reKey(re, n.memoBuf[:0])
		n.memoBuf = b
		if !ok {
			break // a big body: not worth remembering
		}
		k := nfaMemoKey{string(b), next}
		if e, ok := n.memo[k]; ok {
			return e, nil
		}
		e, err := n.compile1(re, next)
		if err == nil {
			if n.memo == nil {
				n.memo = map[nfaMemoKey]int32{}
			}
			n.memo[k] = e
		}
		return e, err
	}
	return n.compile1(re, next)
}

func (n *nfa) compile1(re *syntax.Regexp, next int32) (int32, error) {
	switch re.Op {
	case syntax.OpNoMatch:
		return n.add(nnode{kind: nEps})
	case syntax.OpEmptyMatch:
		return next, nil
	case syntax.OpBeginText:
		return n.add(nnode{kind: nAssert, lo: aBeginText, out: next})
	case syntax.OpBeginLine:
		return n.add(nnode{kind: nAssert, lo: aBeginLine, out: next})
	case syntax.OpEndText:
		return n.add(nnode{kind: nAssert, lo: aEndText, out: next})
	case syntax.OpEndLine:
		return 0, fmt.Errorf("multi-line $ ((?m) mode) is not supported")
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0, fmt.Errorf("word boundaries (\\b, \\B) are not supported")
	case syntax.OpLiteral:
		var err error
		for i := len(re.Rune) - 1; i >= 0; i-- {
			r := re.Rune[i]
			ranges := []rune{r, r}
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					ranges = append(ranges, f, f)
				}
			}
			if next, err = n.class(ranges, next); err != nil {
				return 0, err
			}
		}
		return next, nil
	case syntax.OpCharClass:
		return n.class(re.Rune, next)
	case syntax.OpAnyCharNotNL:
		return n.class([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}, next)
	case syntax.OpAnyChar:
		return n.class([]rune{0, unicode.MaxRune}, next)
	case syntax.OpCapture:
		return n.compile(re.Sub[0], next)
	case syntax.OpConcat:
		var err error
		for i := len(re.Sub) - 1; i >= 0; i-- {
			if next, err = n.compile(re.Sub[i], next); err != nil {
				return 0, err
			}
		}
		return next, nil
	case syntax.OpAlternate:
		outs := make([]int32, len(re.Sub))
		for i, s := range re.Sub {
			e, err := n.compile(s, next)
			if err != nil {
				return 0, err
			}
			outs[i] = e
		}
		return n.add(nnode{kind: nEps, outs: outs})
	case syntax.OpStar, syntax.OpPlus:
		loop, err := n.add(nnode{kind: nEps})
		if err != nil {
			return 0, err
		}
		e, err := n.compile(re.Sub[0], loop)
		if err != nil {
			return 0, err
		}
		n.nodes[loop].outs = []int32{e, next}
		if re.Op == syntax.OpPlus {
			return e, nil
		}
		return loop, nil
	case syntax.OpQuest:
		e, err := n.compile(re.Sub[0], next)
		if err != nil {
			return 0, err
		}
		return n.add(nnode{kind: nEps, outs: []int32{e, next}})
	case syntax.OpRepeat:
		return n.repeat(re.Sub[0], re.Min, re.Max, next)
	}
	return 0, fmt.Errorf("unsupported construct %v", re.Op)
}

// repeat adds sub{lo,hi} (hi < 0: unbounded) followed by next.
func (n *nfa) repeat(sub *syntax.Regexp, lo, hi int, next int32) (int32, error) {
	r := next
	var err error
	if hi < 0 {
		star := &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{sub}}
		if r, err = n.compile(star, next); err != nil {
			return 0, err
		}
	} else {
		for k := 0; k < hi-lo; k++ {
			e, err := n.compile(sub, r)
			if err != nil {
				return 0, err
			}
			if r, err = n.add(nnode{kind: nEps, outs: []int32{e, next}}); err != nil {
				return 0, err
			}
		}
	}
	for k := 0; k < lo; k++ {
		if r, err = n.compile(sub, r); err != nil {
			return 0, err
		}
	}
	return r, nil
}

// class adds a rune class (pairs lo, hi) as alternatives of UTF-8 byte sequences.
func (n *nfa) class(ranges []rune, next int32) (int32, error) {
	var outs []int32
	for _, seq := range classSeqs(ranges) {
		e := next
		var err error
		for i := len(seq) - 1; i >= 0; i-- {
			if e, err = n.add(nnode{kind: nByte, lo: seq[i][0], hi: seq[i][1], out: e}); err != nil {
				return 0, err
			}
		}
		outs = append(outs, e)
	}
	if len(outs) == 1 {
		return outs[0], nil
	}
	return n.add(nnode{kind: nEps, outs: outs})
}

// finish computes which nodes can still reach a match once a byte has been read (the DFA
// keeps only byte nodes whose continuation can): \A never passes after a byte, and $ passes
// only when a match follows with no byte in between.
func (n *nfa) finish() {
	nn := len(n.nodes)
	// reverse edges in one array: rev[off[v]:off[v+1]] are v's predecessors
	off := make([]int32, nn+1)
	edges := func(yield func(from, to int32)) {
		for i := range n.nodes {
			x := &n.nodes[i]
			switch x.kind {
			case nByte, nAssert:
				yield(int32(i), x.out)
			case nEps:
				for _, o := range x.outs {
					yield(int32(i), o)
				}
			}
		}
	}
	edges(func(_, to int32) { off[to+1]++ })
	for i := range nn {
		off[i+1] += off[i]
	}
	rev := make([]int32, off[nn])
	fill := append([]int32(nil), off[:nn]...)
	edges(func(from, to int32) {
		rev[fill[to]] = from
		fill[to]++
	})
	n.live = make([]bool, nn)
	var work []int32
	for i, x := range n.nodes {
		if x.kind == nMatch || (x.kind == nAssert && x.lo == aEndText && n.endsHere(x.out)) {
			n.live[i] = true
			work = append(work, int32(i))
		}
	}
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		for _, p := range rev[off[i]:off[i+1]] {
			if x := &n.nodes[p]; n.live[p] || (x.kind == nAssert && x.lo != aBeginLine) {
				continue // \A: dead after a byte; $: decided above
			}
			n.live[p] = true
			work = append(work, p)
		}
	}
}

// endsHere reports whether a match is reachable from v without reading a byte (after $).
func (n *nfa) endsHere(v int32) bool {
	seen := map[int32]bool{}
	stack := []int32{v}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[i] {
			continue
		}
		seen[i] = true
		switch x := &n.nodes[i]; x.kind {
		case nMatch:
			return true
		case nEps:
			stack = append(stack, x.outs...)
		case nAssert:
			if x.lo != aBeginText {
				stack = append(stack, x.out)
			}
		}
	}
	return false
}
