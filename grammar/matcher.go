// This file is the engine's public face: Vocab, Compile, Grammar and Matcher. A Matcher's
// state is a stack of Earley rows (one per byte position where a terminal ended) and a few
// lexer lanes: each lane is a terminal (or several) being read since its row, with the lazy
// DFA state reached so far. A byte steps every lane; a lane whose state ends terminals scans
// them into a new row, which starts a new lane. The masks are in mask.go.

package grammar

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

// Vocab is a model's vocabulary as byte strings, built once per tokenizer and shared by every
// Matcher (read-only after NewVocab; safe for concurrent use).
type Vocab struct {
	tokens [][]byte
	eos    []int
	once   sync.Once
	trie   *trie

	shareOnce sync.Once
	shared    *sharedCache // mask walks shared by every Grammar (mask.go)
}

// NewVocab builds a Vocab. tokens[i] is the bytes token i stands for (tokenizer Piece); a nil
// or empty entry is a token no grammar ever allows (control tokens). eos lists the ids that end
// a sequence: they are allowed exactly where the grammar accepts the bytes so far.
func NewVocab(tokens [][]byte, eos []int) *Vocab { return &Vocab{tokens: tokens, eos: eos} }

// Size is the number of token ids.
func (v *Vocab) Size() int { return len(v.tokens) }

// MaskWords is the length of a mask over v in uint64 words.
func (v *Vocab) MaskWords() int { return (len(v.tokens) + 63) / 64 }

// Limits bound what Compile builds (a grammar too large is an error, never an out-of-memory).
type Limits struct {
	MaxRules      int // rules after expansion of repeats (0 = default)
	MaxLexerBytes int // memory the lexer's automata may take (0 = default)
}

const (
	defaultMaxRules      = 100_000
	defaultMaxLexerBytes = 128 << 20
)

// Grammar is a compiled IR: immutable apart from internal caches; safe for concurrent use by
// many Matchers.
type Grammar struct {
	g      *cgrammar
	lex    *lexer
	row0   *row
	maxMem int
	mu     sync.Mutex
	caches map[*Vocab]*vcache
}

// Compile checks ir and builds its lexer and parser. Errors say what is wrong (an undefined
// rule, a regular expression that does not parse or is unsupported, a grammar over Limits).
func Compile(ir *IR, lim Limits) (*Grammar, error) {
	if err := ir.Validate(); err != nil {
		return nil, err
	}
	if lim.MaxRules <= 0 {
		lim.MaxRules = defaultMaxRules
	}
	if lim.MaxLexerBytes <= 0 {
		lim.MaxLexerBytes = defaultMaxLexerBytes
	}
	n := &nfa{max: lim.MaxLexerBytes / 64}
	mk := func(n *nfa) *lexer { return newLexer(n, lim.MaxLexerBytes/2) }
	g, lex, err := lower(ir, n, mk, lim.MaxRules)
	if err != nil {
		return nil, err
	}
	gr := &Grammar{g: g, lex: lex, maxMem: lim.MaxLexerBytes, caches: map[*Vocab]*vcache{}}
	var ps parseScratch
	ps.init(g)
	gr.row0 = g.firstRow(&ps, lex)
	return gr, nil
}

type lane struct {
	row int32
	d   *dstate
}

type snap struct {
	nrows, pos int32
	lanes      []lane
}

// Matcher follows one sequence through a Grammar. Not safe for concurrent use; distinct
// Matchers of one Grammar may run concurrently.
type Matcher struct {
	g      *Grammar
	v      *Vocab
	vc     *vcache
	rows   []*row
	rowPos []int32
	lanes  []lane
	pos    int32
	hist   []snap
	ps     parseScratch
	tmp    []lane
	memo   map[memoKey]*row
	walk   walkScratch
}

type memoKey struct {
	parent *row
	acc    int32
	idx    int32
}

// NewMatcher starts a Matcher at the beginning of the grammar's language.
func (g *Grammar) NewMatcher(v *Vocab) *Matcher {
	m := &Matcher{g: g, v: v, memo: map[memoKey]*row{}}
	if v != nil {
		m.vc = g.vcache(v)
	}
	m.ps.init(g.g)
	m.rows = []*row{g.row0}
	m.rowPos = []int32{0}
	if g.row0.start != g.lex.dead {
		m.lanes = []lane{{0, g.row0.start}}
	}
	return m
}

// newRow returns the row scanned from rows[parent] over the terminals of accID, built for
// index idx (memoized: rows are immutable).
func (m *Matcher) newRow(parent int32, accID int32, idx int32) *row {
	k := memoKey{m.rows[parent], accID, idx}
	if r, ok := m.memo[k]; ok {
		return r
	}
	g := m.g.g
	m.ps.reset()
	g.seedScan(&m.ps, m.rows[parent], m.g.lex.accBits(accID), idx)
	r := g.close(&m.ps, m.rows[:idx], idx, m.g.lex)
	m.memo[k] = r
	return r
}

// advance steps the state over byte b; false (state unusable: restore it) if b cannot follow.
func (m *Matcher) advance(b byte) bool {
	lex := m.g.lex
	nl := m.tmp[:0]
	scanned, single := 0, int32(-1)
	var singleAcc int32
	for _, ln := range m.lanes {
		t := ln.d.next[b].Load()
		if t == nil {
			t = lex.step(ln.d, b)
		}
		if t == lex.dead {
			continue
		}
		nl = append(nl, lane{ln.row, t})
		if t.accID >= 0 {
			scanned++
			single, singleAcc = ln.row, t.accID
		}
	}
	idx := int32(len(m.rows))
	var r *row
	switch {
	case scanned == 1:
		r = m.newRow(single, singleAcc, idx)
	case scanned > 1:
		g := m.g.g
		m.ps.reset()
		for _, ln := range nl {
			if ln.d.accID >= 0 {
				g.seedScan(&m.ps, m.rows[ln.row], lex.accBits(ln.d.accID), idx)
			}
		}
		r = g.close(&m.ps, m.rows, idx, lex)
	}
	if r != nil {
		m.rows = append(m.rows, r)
		m.rowPos = append(m.rowPos, m.pos+1)
		if r.start != lex.dead {
			nl = append(nl, lane{idx, r.start})
		}
	}
	m.tmp = m.lanes
	m.lanes = nl
	m.pos++
	return len(nl) > 0 || (r != nil && r.accept)
}

func (m *Matcher) save() snap {
	return snap{nrows: int32(len(m.rows)), pos: m.pos, lanes: append([]lane(nil), m.lanes...)}
}

func (m *Matcher) restore(s snap) {
	m.rows = m.rows[:s.nrows]
	m.rowPos = m.rowPos[:s.nrows]
	m.pos = s.pos
	m.lanes = append(m.lanes[:0], s.lanes...)
}

// Accept advances past token tok; an error (and no change) if tok is not allowed.
func (m *Matcher) Accept(tok int) error {
	if m.v == nil || tok < 0 || tok >= len(m.v.tokens) {
		return fmt.Errorf("grammar: token %d is not in the vocabulary", tok)
	}
	t := m.v.getTrie()
	if t.eos[tok/64]>>(tok%64)&1 != 0 {
		if !m.CanEnd() {
			return fmt.Errorf("grammar: end of sequence (token %d) before the output is complete", tok)
		}
		m.hist = append(m.hist, m.save())
		return nil
	}
	b := m.v.tokens[tok]
	if len(b) == 0 {
		return fmt.Errorf("grammar: token %d has no text", tok)
	}
	if err := m.AcceptBytes(b); err != nil {
		return fmt.Errorf("grammar: token %d (%q) is not allowed here", tok, b)
	}
	return nil
}

var errBytes = errors.New("grammar: bytes not allowed here")

// AcceptBytes advances past raw bytes (forced text, tests, the structured bench); an error
// (and no change) if they cannot continue the sentence.
func (m *Matcher) AcceptBytes(b []byte) error {
	s := m.save()
	for i, c := range b {
		if !m.advance(c) {
			m.restore(s)
			return fmt.Errorf("%w: %q after %d bytes", errBytes, b, i)
		}
	}
	m.hist = append(m.hist, s)
	clear(m.memo)
	return nil
}

// Rollback undoes the last n Accept/AcceptBytes calls (speculative decoding).
func (m *Matcher) Rollback(n int) {
	n = min(n, len(m.hist))
	if n <= 0 {
		return
	}
	m.restore(m.hist[len(m.hist)-n])
	m.hist = m.hist[:len(m.hist)-n]
	clear(m.memo)
}

// CanEnd reports whether the bytes so far form a sentence of the grammar (EOS allowed).
func (m *Matcher) CanEnd() bool {
	last := len(m.rows) - 1
	return m.rowPos[last] == m.pos && m.rows[last].accept
}

// Done reports whether the sentence is complete and no byte may follow it: the sequence ends
// with finish_reason "stop".
func (m *Matcher) Done() bool {
	if !m.CanEnd() {
		return false
	}
	for _, ln := range m.lanes {
		if ln.d.grow {
			return false
		}
	}
	return true
}

// ForcedBytes returns the bytes every continuation must start with (nil if there is a choice).
func (m *Matcher) ForcedBytes() []byte {
	var out []byte
	s := m.save()
	for len(out) < 4096 && !m.CanEnd() {
		var set [4]uint64
		for _, ln := range m.lanes {
			for i := range set {
				set[i] |= ln.d.bytes[i]
			}
		}
		n := 0
		var b byte
		for i, w := range set {
			n += bits.OnesCount64(w)
			if w != 0 {
				b = byte(64*i + bits.TrailingZeros64(w))
			}
		}
		if n != 1 || !m.advance(b) {
			break
		}
		out = append(out, b)
	}
	m.restore(s)
	return out
}
