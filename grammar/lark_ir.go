// This file turns a parsed Lark grammar into the IR: each terminal becomes one rule whose body
// is a literal or a single regular expression (terminals are regular), %ignore becomes an
// optional match after every terminal (and before the first), and the common terminals that
// %import brings in are defined here.

package grammar

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// larkCommon defines the terminals of Lark's common module, as Go regular expressions.
var larkCommon = map[string]string{
	"DIGIT":          `[0-9]`,
	"HEXDIGIT":       `[0-9a-fA-F]`,
	"INT":            `[0-9]+`,
	"SIGNED_INT":     `[+-]?[0-9]+`,
	"DECIMAL":        `[0-9]+\.[0-9]*|\.[0-9]+`,
	"FLOAT":          larkFloat,
	"SIGNED_FLOAT":   `[+-]?(?:` + larkFloat + `)`,
	"NUMBER":         larkFloat + `|[0-9]+`,
	"SIGNED_NUMBER":  `[+-]?(?:` + larkFloat + `|[0-9]+)`,
	"ESCAPED_STRING": `"(?:[^"\\\n]|\\.)*"`,
	"LCASE_LETTER":   `[a-z]`,
	"UCASE_LETTER":   `[A-Z]`,
	"LETTER":         `[a-zA-Z]`,
	"WORD":           `[a-zA-Z]+`,
	"CNAME":          `[_a-zA-Z][_a-zA-Z0-9]*`,
	"WS_INLINE":      `[ \t]+`,
	"WS":             `[ \t\f\r\n]+`,
	"CR":             `\r`,
	"LF":             `\n`,
	"NEWLINE":        `(?:\r?\n)+`,
	"SH_COMMENT":     `#[^\n]*`,
	"CPP_COMMENT":    `//[^\n]*`,
	"C_COMMENT":      `/\*(?:[^*]|\*+[^*/])*\*+/`,
	"SQL_COMMENT":    `--[^\n]*`,
}

// larkFloat: digits with an exponent, or a decimal with an optional exponent.
const larkFloat = `[0-9]+[eE][+-]?[0-9]+|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?`

func commonNames() string {
	names := make([]string, 0, len(larkCommon))
	for n := range larkCommon {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func quoteMeta(s string) string { return regexp.QuoteMeta(s) }

func checkRegex(pat string) error {
	_, err := syntax.Parse(pat, syntax.Perl)
	return err
}

// maxTermRegex bounds a terminal written out as one regex (terminals that use terminals
// that use terminals... grow exponentially).
const maxTermRegex = 256 << 10

// Names of the rules the IR adds (no Lark name can contain %).
const (
	larkIgnoreRule = "%ignore"
	larkStartRule  = "%start"
)

func (p *larkParser) build() (*IR, error) {
	used := make([]string, 0, len(p.useAt))
	for n := range p.useAt {
		used = append(used, n)
	}
	sort.Slice(used, func(i, j int) bool { return p.useAt[used[i]] < p.useAt[used[j]] })
	for _, n := range used {
		if _, ok := p.rules[n]; ok {
			continue
		}
		if _, ok := p.terms[n]; !ok {
			return nil, p.undefined(n)
		}
	}
	if _, ok := p.rules["start"]; !ok {
		return nil, p.errAt(0, "no start rule (a Lark grammar starts at `start: ...`)")
	}
	ir := &IR{Start: "start", Rules: map[string]*Expr{}}
	tb := &termBuilder{p: p, done: map[string]string{}, busy: map[string]bool{}}
	names := make([]string, 0, len(p.terms))
	for n := range p.terms {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		re, err := tb.term(n)
		if err != nil {
			return nil, err
		}
		if lit, ok := literalOf(p.terms[n]); ok && lit != "" {
			ir.Rules[n] = Lit(lit)
		} else {
			ir.Rules[n] = Re(re)
		}
	}
	ignoring := len(p.ignore) > 0
	if ignoring {
		alts := make([]string, len(p.ignore))
		for i, e := range p.ignore {
			re, err := tb.regex(e)
			if err != nil {
				return nil, err
			}
			alts[i] = re
		}
		pat := "(?:" + strings.Join(alts, "|") + ")+"
		if err := checkRegex(pat); err != nil {
			return nil, p.errAt(0, "%%ignore: %v", err)
		}
		ir.Rules[larkIgnoreRule] = Opt(Re(pat))
		ir.Rules[larkStartRule] = Seq(Ref(larkIgnoreRule), Ref("start"))
		ir.Start = larkStartRule
	}
	for n, e := range p.rules {
		if ignoring {
			e = p.withIgnore(e)
		}
		ir.Rules[n] = e
	}
	for n, e := range p.jsons {
		ir.Rules[n] = e
	}
	return ir, nil
}

// withIgnore lets the ignored text follow every terminal in e.
func (p *larkParser) withIgnore(e *Expr) *Expr {
	switch e.Kind {
	case KindLiteral, KindRegex:
		return Seq(e, Ref(larkIgnoreRule))
	case KindRef:
		if _, term := p.terms[e.Text]; term || slices.Contains(p.jsonStarts, e.Text) {
			return Seq(e, Ref(larkIgnoreRule))
		}
		return e
	}
	out := *e
	out.Subs = make([]*Expr, len(e.Subs))
	for i, s := range e.Subs {
		out.Subs[i] = p.withIgnore(s)
	}
	return &out
}

// literalOf reports whether e is a fixed string (literals in sequence).
func literalOf(e *Expr) (string, bool) {
	switch e.Kind {
	case KindLiteral:
		return e.Text, true
	case KindSeq:
		var b strings.Builder
		for _, s := range e.Subs {
			l, ok := literalOf(s)
			if !ok {
				return "", false
			}
			b.WriteString(l)
		}
		return b.String(), true
	}
	return "", false
}

// termBuilder writes terminals as single regular expressions.
type termBuilder struct {
	p    *larkParser
	done map[string]string
	busy map[string]bool
}

func (tb *termBuilder) term(name string) (string, error) {
	if re, ok := tb.done[name]; ok {
		return re, nil
	}
	if tb.busy[name] {
		return "", tb.p.errAt(tb.p.defAt[name], "terminal %s refers to itself (terminals must be regular; make it a rule)", name)
	}
	tb.busy[name] = true
	e := tb.p.terms[name]
	var re string
	if e.Kind == KindRegex { // imported, or a single regex: already checked
		re = e.Text
	} else {
		var err error
		if re, err = tb.regex(e); err != nil {
			return "", err
		}
		if len(re) > maxTermRegex {
			return "", tb.p.errAt(tb.p.defAt[name], "terminal %s is too large (over %d bytes as a regex)", name, maxTermRegex)
		}
		if err := checkRegex(re); err != nil {
			return "", tb.p.errAt(tb.p.defAt[name], "terminal %s: %v", name, err)
		}
	}
	delete(tb.busy, name)
	tb.done[name] = re
	return re, nil
}

func (tb *termBuilder) regex(e *Expr) (string, error) {
	switch e.Kind {
	case KindLiteral:
		return quoteMeta(e.Text), nil
	case KindRegex:
		return e.Text, nil
	case KindRef:
		re, err := tb.term(e.Text)
		return "(?:" + re + ")", err
	case KindRepeat:
		sub, err := tb.regex(e.Subs[0])
		if err != nil {
			return "", err
		}
		q := "{" + strconv.Itoa(e.Min) + "," + strconv.Itoa(e.Max) + "}"
		switch {
		case e.Min == 0 && e.Max == 1:
			q = "?"
		case e.Min == 0 && e.Max < 0:
			q = "*"
		case e.Min == 1 && e.Max < 0:
			q = "+"
		case e.Max < 0:
			q = "{" + strconv.Itoa(e.Min) + ",}"
		case e.Min == e.Max:
			q = "{" + strconv.Itoa(e.Min) + "}"
		}
		return "(?:" + sub + ")" + q, nil
	}
	parts := make([]string, len(e.Subs))
	for i, s := range e.Subs {
		var err error
		if parts[i], err = tb.regex(s); err != nil {
			return "", err
		}
	}
	if e.Kind == KindAlt {
		if len(parts) == 0 {
			return `[^\x00-\x{10FFFF}]`, nil
		}
		return "(?:" + strings.Join(parts, "|") + ")", nil
	}
	return strings.Join(parts, ""), nil // every part is an atom or a concatenation
}
