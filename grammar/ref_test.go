// This file is the tests' reference recognizer: the IR read directly as a CFG over bytes,
// decided by a fixpoint over spans (for each expression and start, the set of ends), with Go's
// regexp for the regular-expression terminals. Slow and obviously right; strings up to 63 bytes.

package grammar

import (
	"regexp"
	"unicode/utf8"
)

type refRecognizer struct {
	ir  *IR
	res map[string]*regexp.Regexp
}

func newRef(ir *IR) *refRecognizer {
	return &refRecognizer{ir: ir, res: map[string]*regexp.Regexp{}}
}

func (r *refRecognizer) re(p string) *regexp.Regexp {
	if x, ok := r.res[p]; ok {
		return x
	}
	x := regexp.MustCompile(`^(?:` + p + `)$`)
	r.res[p] = x
	return x
}

// accepts reports whether s is in the IR's language.
func (r *refRecognizer) accepts(s string) bool {
	n := len(s)
	if n > 62 {
		panic("reference: string too long")
	}
	var all []*Expr
	seen := map[*Expr]bool{}
	var visit func(e *Expr)
	visit = func(e *Expr) {
		if seen[e] {
			return
		}
		seen[e] = true
		for _, c := range e.Subs {
			visit(c)
		}
		all = append(all, e)
	}
	for _, name := range r.ir.ruleNames() {
		visit(r.ir.Rules[name])
	}
	tab := map[*Expr][]uint64{}
	for _, e := range all {
		tab[e] = make([]uint64, n+1)
	}
	get := func(e *Expr, i int) uint64 {
		if e.Kind == KindRef {
			return tab[r.ir.Rules[e.Text]][i]
		}
		return tab[e][i]
	}
	step := func(e *Expr, set uint64) uint64 {
		var out uint64
		for p := 0; p <= n; p++ {
			if set>>p&1 != 0 {
				out |= get(e, p)
			}
		}
		return out
	}
	compute := func(e *Expr, i int) uint64 {
		var out uint64
		switch e.Kind {
		case KindLiteral:
			if len(s)-i >= len(e.Text) && s[i:i+len(e.Text)] == e.Text {
				out = 1 << (i + len(e.Text))
			}
		case KindRegex:
			x := r.re(e.Text)
			for j := i; j <= n; j++ {
				if utf8.ValidString(s[i:j]) && x.MatchString(s[i:j]) {
					out |= 1 << j
				}
			}
		case KindRef:
			out = get(e, i)
		case KindSeq:
			out = 1 << i
			for _, c := range e.Subs {
				out = step(c, out)
			}
		case KindAlt:
			for _, c := range e.Subs {
				out |= get(c, i)
			}
		case KindRepeat:
			p := uint64(1) << i
			if e.Min == 0 {
				out |= p
			}
			seenP := map[uint64]bool{}
			for c := 1; e.Max < 0 || c <= e.Max; c++ {
				p = step(e.Subs[0], p)
				if c >= e.Min {
					out |= p
					if seenP[p] {
						break
					}
					seenP[p] = true
				}
				if p == 0 {
					break
				}
			}
		}
		return out
	}
	for changed := true; changed; {
		changed = false
		for _, e := range all {
			for i := 0; i <= n; i++ {
				v := compute(e, i) | tab[e][i]
				if v != tab[e][i] {
					tab[e][i] = v
					changed = true
				}
			}
		}
	}
	return tab[r.ir.Rules[r.ir.Start]][0]>>n&1 != 0
}
