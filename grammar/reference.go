// This file has Match, a plain reference recognizer for the IR: memoized recursive descent
// computing, for every (expression, position), the set of positions where a match can end;
// left recursion is handled by iterating to a fixpoint. Regex terminals run on an NFA
// simulation of Go's compiled program that reports every end position. It is slow and simple
// on purpose: tests check the fast engine against it.

package grammar

import (
	"regexp/syntax"
	"sort"
	"unicode/utf8"
)

// Match reports whether b is in the language of g (false for an invalid grammar).
func (g *IR) Match(b []byte) bool {
	if g.Validate() != nil {
		return false
	}
	m := &refMatcher{g: g, in: b, memo: map[refKey][]int{}, progs: map[string]*syntax.Prog{}}
	start := g.Rules[g.Start]
	for {
		m.changed = false
		m.done = map[refKey]bool{}
		ends := m.ends(start, 0)
		if !m.changed {
			for _, e := range ends {
				if e == len(b) {
					return true
				}
			}
			return false
		}
	}
}

type refKey struct {
	e   *Expr
	pos int
}

type refMatcher struct {
	g       *IR
	in      []byte
	memo    map[refKey][]int // ends found so far (grows monotonically)
	done    map[refKey]bool  // computed in this pass (or in progress)
	changed bool
	progs   map[string]*syntax.Prog
}

func (m *refMatcher) ends(e *Expr, pos int) []int {
	k := refKey{e, pos}
	if m.done[k] {
		return m.memo[k]
	}
	m.done[k] = true
	set := map[int]bool{}
	switch e.Kind {
	case KindLiteral:
		if len(m.in)-pos >= len(e.Text) && string(m.in[pos:pos+len(e.Text)]) == e.Text {
			set[pos+len(e.Text)] = true
		}
	case KindRegex:
		for _, end := range m.regexEnds(e.Text, pos) {
			set[end] = true
		}
	case KindRef:
		for _, end := range m.ends(m.g.Rules[e.Text], pos) {
			set[end] = true
		}
	case KindAlt:
		for _, s := range e.Subs {
			for _, end := range m.ends(s, pos) {
				set[end] = true
			}
		}
	case KindSeq:
		cur := map[int]bool{pos: true}
		for _, s := range e.Subs {
			next := map[int]bool{}
			for p := range cur {
				for _, end := range m.ends(s, p) {
					next[end] = true
				}
			}
			cur = next
		}
		set = cur
	case KindRepeat:
		cur := map[int]bool{pos: true}
		seen := map[int]bool{}
		for n := 0; ; n++ {
			if n >= e.Min {
				grew := false
				for p := range cur {
					if !seen[p] {
						seen[p], grew = true, true
					}
				}
				if !grew && n > e.Min {
					break
				}
			}
			if e.Max >= 0 && n == e.Max || len(cur) == 0 {
				break
			}
			next := map[int]bool{}
			for p := range cur {
				for _, end := range m.ends(e.Subs[0], p) {
					next[end] = true
				}
			}
			cur = next
		}
		set = seen
	}
	old := m.memo[k]
	for _, o := range old {
		set[o] = true
	}
	if len(set) != len(old) {
		m.changed = true
		out := make([]int, 0, len(set))
		for p := range set {
			out = append(out, p)
		}
		sort.Ints(out)
		m.memo[k] = out
	}
	return m.memo[k]
}

// regexEnds returns every end such that in[pos:end] matches the whole regex.
func (m *refMatcher) regexEnds(re string, pos int) []int {
	prog, ok := m.progs[re]
	if !ok {
		if r, err := syntax.Parse(re, syntax.Perl); err == nil {
			prog, _ = syntax.Compile(r.Simplify())
		}
		m.progs[re] = prog
	}
	if prog == nil {
		return nil
	}
	in := m.in[pos:]
	var out []int
	prev := rune(-1) // start of the terminal's text
	cur := m.closure(prog, []uint32{uint32(prog.Start)}, prev, peekRune(in, 0))
	for i := 0; ; {
		r, w := peekRune(in, i), 1
		if i < len(in) {
			_, w = utf8.DecodeRune(in[i:])
		}
		for _, pc := range cur {
			if prog.Inst[pc].Op == syntax.InstMatch {
				out = append(out, pos+i)
				break
			}
		}
		if i >= len(in) || len(cur) == 0 {
			break
		}
		var next []uint32
		for _, pc := range cur {
			inst := &prog.Inst[pc]
			switch inst.Op {
			case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
				if inst.MatchRune(r) {
					next = append(next, inst.Out)
				}
			}
		}
		prev = r
		i += w
		cur = m.closure(prog, next, prev, peekRune(in, i))
	}
	return out
}

func peekRune(in []byte, i int) rune {
	if i >= len(in) {
		return -1
	}
	r, _ := utf8.DecodeRune(in[i:])
	return r
}

// closure follows empty transitions. Threads that go on to read a rune see the real next
// rune in their assertions; a match (the terminal's text ending here) sees the end of text.
func (m *refMatcher) closure(prog *syntax.Prog, pcs []uint32, prev, next rune) []uint32 {
	cont := follow(prog, pcs, syntax.EmptyOpContext(prev, next))
	end := follow(prog, pcs, syntax.EmptyOpContext(prev, -1))
	out := make([]uint32, 0, len(cont)+1)
	for _, pc := range cont {
		if prog.Inst[pc].Op != syntax.InstMatch {
			out = append(out, pc)
		}
	}
	for _, pc := range end {
		if prog.Inst[pc].Op == syntax.InstMatch {
			out = append(out, pc)
			break
		}
	}
	return out
}

func follow(prog *syntax.Prog, pcs []uint32, ctx syntax.EmptyOp) []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	var visit func(pc uint32)
	visit = func(pc uint32) {
		if seen[pc] {
			return
		}
		seen[pc] = true
		inst := &prog.Inst[pc]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			visit(inst.Out)
			visit(inst.Arg)
		case syntax.InstNop, syntax.InstCapture:
			visit(inst.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(inst.Arg)&^ctx == 0 {
				visit(inst.Out)
			}
		case syntax.InstFail:
		default:
			out = append(out, pc)
		}
	}
	for _, pc := range pcs {
		visit(pc)
	}
	return out
}
