// This file lowers the IR to plain BNF for the Earley parser: nonterminals with productions
// over terminal and nonterminal symbols. Alternatives and repeats inside a rule become
// anonymous nonterminals; a bounded repeat becomes a chain of optional rules (counted against
// Limits.MaxRules), an unbounded one a left-recursive rule. Terminals are interned literals and
// regular expressions, compiled into the lexer's NFA. Unproductive symbols are removed, so
// every prefix the parser accepts extends to a sentence.

package grammar

import "fmt"

// dot is one position in a production: the symbol after the dot (-1 at the end) and the
// production's left-hand side.
type dot struct {
	sym int32 // < nT: terminal; >= nT: nonterminal nT+i; -1: end of production
	lhs int32 // the nonterminal symbol
	// counted rules (R -> x with R = x{lo,hi}): on both dots of the production
	counted bool
	lo, hi  int32
}

type cgrammar struct {
	nT        int32
	dots      []dot
	prods     [][]int32 // per nonterminal (sym - nT): the first dot of each production
	nullable  []bool    // per symbol
	start     int32     // the augmented start symbol S' -> Start
	acceptDot int32     // the dot at the end of S' -> Start
}

type bnfBuilder struct {
	ir       *IR
	n        *nfa
	terms    map[string]int32
	nts      [][][]int32 // per nonterminal: productions; symbols: >= 0 terminal, < 0 ^nonterminal
	ruleNT   map[string]int32
	memo     map[*Expr][]int32
	reps     map[int32]repSpec // counted rules (by nonterminal index)
	maxRules int
	nsyms    int
}

func (b *bnfBuilder) newNT() (int32, error) {
	if len(b.nts) >= b.maxRules {
		return 0, fmt.Errorf("grammar: more than %d rules after expanding repeats (Limits.MaxRules)", b.maxRules)
	}
	b.nts = append(b.nts, nil)
	return ^int32(len(b.nts) - 1), nil
}

func (b *bnfBuilder) addProd(nt int32, syms []int32) error {
	b.nsyms += len(syms) + 1
	if b.nsyms > 8*b.maxRules {
		return fmt.Errorf("grammar: more than %d symbols after expanding repeats (Limits.MaxRules)", 8*b.maxRules)
	}
	b.nts[^nt] = append(b.nts[^nt], syms)
	return nil
}

func (b *bnfBuilder) term(kind Kind, text string) (int32, error) {
	key := string(rune('0'+kind)) + text
	if t, ok := b.terms[key]; ok {
		return t, nil
	}
	var t int32
	var err error
	first := int32(len(b.n.nodes))
	if kind == KindLiteral {
		t, err = b.n.addLiteral(text)
		if err != nil {
			err = fmt.Errorf("grammar: literal %q: %v", text, err)
		}
	} else {
		t, err = b.n.addRegex(text)
	}
	if err != nil {
		return 0, err
	}
	b.terms[key] = t
	b.n.named(key, first)
	return t, nil
}

func (b *bnfBuilder) rule(name string) (int32, error) {
	if nt, ok := b.ruleNT[name]; ok {
		return nt, nil
	}
	nt, err := b.newNT()
	if err != nil {
		return 0, err
	}
	b.ruleNT[name] = nt
	e := b.ir.Rules[name]
	alts := []*Expr{e}
	if e.Kind == KindAlt {
		alts = e.Subs
	}
	for _, a := range alts {
		syms, err := b.syms(a)
		if err != nil {
			return 0, err
		}
		if err := b.addProd(nt, syms); err != nil {
			return 0, err
		}
	}
	return nt, nil
}

// one returns a single symbol standing for e.
func (b *bnfBuilder) one(e *Expr) (int32, bool, error) {
	syms, err := b.syms(e)
	if err != nil || len(syms) == 0 {
		return 0, false, err
	}
	if len(syms) == 1 {
		return syms[0], true, nil
	}
	nt, err := b.newNT()
	if err == nil {
		err = b.addProd(nt, syms)
	}
	return nt, true, err
}

// syms returns the symbol sequence for e.
func (b *bnfBuilder) syms(e *Expr) ([]int32, error) {
	switch e.Kind {
	case KindLiteral:
		if e.Text == "" {
			return nil, nil
		}
		t, err := b.term(KindLiteral, e.Text)
		return []int32{t}, err
	case KindRegex:
		t, err := b.term(KindRegex, e.Text)
		return []int32{t}, err
	case KindRef:
		nt, err := b.rule(e.Text)
		return []int32{nt}, err
	case KindSeq:
		var out []int32
		for _, s := range e.Subs {
			ss, err := b.syms(s)
			if err != nil {
				return nil, err
			}
			out = append(out, ss...)
		}
		return out, nil
	}
	if m, ok := b.memo[e]; ok {
		return m, nil
	}
	var out []int32
	var err error
	if e.Kind == KindAlt {
		if len(e.Subs) == 1 {
			return b.syms(e.Subs[0])
		}
		out, err = b.alt(e)
	} else {
		out, err = b.repeat(e)
	}
	if err != nil {
		return nil, err
	}
	b.memo[e] = out
	return out, nil
}

func (b *bnfBuilder) alt(e *Expr) ([]int32, error) {
	nt, err := b.newNT()
	if err != nil {
		return nil, err
	}
	for _, s := range e.Subs {
		ss, err := b.syms(s)
		if err != nil {
			return nil, err
		}
		if err := b.addProd(nt, ss); err != nil {
			return nil, err
		}
	}
	return []int32{nt}, nil
}

// repeat makes a counted rule R -> x whose Earley items carry the number of x read so far
// (earley.go), so x{0,1000} costs one rule and one item per row, not a chain of 1000 rules.
func (b *bnfBuilder) repeat(e *Expr) ([]int32, error) {
	x, ok, err := b.one(e.Subs[0])
	if err != nil || !ok || e.Max == 0 {
		return nil, err // the empty string, repeated
	}
	if e.Min == 1 && e.Max == 1 {
		return []int32{x}, nil
	}
	r, err := b.newNT()
	if err != nil {
		return nil, err
	}
	if err := b.addProd(r, []int32{x}); err != nil {
		return nil, err
	}
	b.reps[^r] = repSpec{lo: int32(min(e.Min, 1<<30)), hi: int32(min(e.Max, 1<<30))}
	return []int32{r}, nil
}

type repSpec struct{ lo, hi int32 } // hi < 0: unbounded

// lower builds the BNF for ir; the NFA n receives the terminals.
func lower(ir *IR, n *nfa, lex func(*nfa) *lexer, maxRules int) (*cgrammar, *lexer, error) {
	b := &bnfBuilder{ir: ir, n: n, terms: map[string]int32{}, ruleNT: map[string]int32{},
		memo: map[*Expr][]int32{}, reps: map[int32]repSpec{}, maxRules: maxRules}
	startNT, err := b.newNT()
	if err != nil {
		return nil, nil, err
	}
	s, err := b.rule(ir.Start)
	if err != nil {
		return nil, nil, err
	}
	if err := b.addProd(startNT, []int32{s}); err != nil {
		return nil, nil, err
	}
	n.finish()
	l := lex(n)
	nT := int32(len(n.starts))
	nSym := int(nT) + len(b.nts)
	sym := func(s int32) int32 {
		if s < 0 {
			return nT + ^s
		}
		return s
	}
	productive := make([]bool, nSym)
	nullable := make([]bool, nSym)
	for t := range nT {
		nullable[t], productive[t] = l.termInfo(t)
	}
	for changed := true; changed; {
		changed = false
		for i, ps := range b.nts {
			x := int(nT) + i
			if r, ok := b.reps[int32(i)]; ok && r.lo == 0 {
				if !productive[x] || !nullable[x] {
					productive[x], nullable[x], changed = true, true, true
				}
			}
			for _, p := range ps {
				prod, null := true, true
				for _, s := range p {
					prod = prod && productive[sym(s)]
					null = null && nullable[sym(s)]
				}
				if prod && !productive[x] {
					productive[x], changed = true, true
				}
				if null && !nullable[x] {
					nullable[x], changed = true, true
				}
			}
		}
	}
	if !productive[sym(startNT)] {
		return nil, nil, fmt.Errorf("grammar: the grammar matches no string")
	}
	g := &cgrammar{nT: nT, prods: make([][]int32, len(b.nts)), nullable: nullable, start: sym(startNT)}
	for i, ps := range b.nts {
		lhs := nT + int32(i)
	prods:
		for _, p := range ps {
			for _, s := range p {
				if !productive[sym(s)] {
					continue prods
				}
			}
			g.prods[i] = append(g.prods[i], int32(len(g.dots)))
			r, counted := b.reps[int32(i)]
			if counted && nullable[sym(p[0])] {
				r.lo = 0 // empty iterations make any count up to lo: never read them
			}
			for _, s := range p {
				g.dots = append(g.dots, dot{sym: sym(s), lhs: lhs, counted: counted, lo: r.lo, hi: r.hi})
			}
			g.dots = append(g.dots, dot{sym: -1, lhs: lhs, counted: counted, lo: r.lo, hi: r.hi})
		}
	}
	g.acceptDot = g.prods[g.start-nT][0] + 1
	return g, l, nil
}
