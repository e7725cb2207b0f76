// This file parses llama.cpp's GBNF: `name ::= alternatives` rules starting at "root", with
// string literals, character classes, `.`, grouping, `* + ?` and `{m,n}` repetition, and `#`
// comments. A rule may run over several lines: inside parentheses, after `|`, or on any line
// that does not itself start a rule (`name ::=`), a superset of what llama.cpp accepts.

package grammar

import (
	"sort"
	"strconv"
	"unicode/utf8"
)

// maxRepeat bounds the counts of {m,n} (a larger count is almost surely a typo, and the
// repeat would be expanded by Compile).
const maxRepeat = 100000

// maxNesting bounds how deep parentheses nest.
const maxNesting = 500

type gbnfParser struct {
	src   string
	pos   int
	depth int // open parentheses
	rules map[string]*Expr
	defAt map[string]int // where each rule is defined
	useAt map[string]int // where each rule is first used
}

func parseGBNF(src string) (*IR, error) {
	p := &gbnfParser{src: src, rules: map[string]*Expr{}, defAt: map[string]int{}, useAt: map[string]int{}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return &IR{Start: "root", Rules: p.rules}, nil
}

func (p *gbnfParser) errAt(pos int, msg string, args ...any) error {
	return syntaxErr("gbnf", p.src, pos, msg, args...)
}

func (p *gbnfParser) parse() error {
	p.skipSpace(true)
	for p.pos < len(p.src) {
		if err := p.rule(); err != nil {
			return err
		}
		p.skipSpace(true)
	}
	if len(p.rules) == 0 {
		return p.errAt(0, "no rules (a GBNF grammar starts at `root ::= ...`)")
	}
	if _, ok := p.rules["root"]; !ok {
		return p.errAt(0, "no rule named root (the rule a GBNF grammar starts at)")
	}
	// Undefined rules, reported at their first use (in source order).
	var missing []string
	for name := range p.useAt {
		if _, ok := p.rules[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Slice(missing, func(i, j int) bool { return p.useAt[missing[i]] < p.useAt[missing[j]] })
		return p.errAt(p.useAt[missing[0]], "undefined rule %q", missing[0])
	}
	return nil
}

// skipSpace skips blanks and comments, and line breaks too when newlines is set.
func (p *gbnfParser) skipSpace(newlines bool) {
	p.pos = p.spaceEnd(p.pos, newlines)
}

func (p *gbnfParser) spaceEnd(i int, newlines bool) int {
	for i < len(p.src) {
		switch c := p.src[i]; {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\n' && newlines:
			i++
		case c == '#':
			for i < len(p.src) && p.src[i] != '\n' {
				i++
			}
		default:
			return i
		}
	}
	return i
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func (p *gbnfParser) nameEnd(i int) int {
	for i < len(p.src) && isNameByte(p.src[i]) {
		i++
	}
	return i
}

// ruleStartAt reports whether a rule definition (`name ::=`) starts at i.
func (p *gbnfParser) ruleStartAt(i int) bool {
	e := p.nameEnd(i)
	if e == i {
		return false
	}
	e = p.spaceEnd(e, false)
	return len(p.src)-e >= 3 && p.src[e:e+3] == "::="
}

func (p *gbnfParser) rule() error {
	start := p.pos
	end := p.nameEnd(start)
	if end == start {
		return p.errAt(start, "expected a rule name, found %s", p.found(start))
	}
	name := p.src[start:end]
	p.pos = end
	p.skipSpace(false)
	if len(p.src)-p.pos < 3 || p.src[p.pos:p.pos+3] != "::=" {
		return p.errAt(p.pos, "expected ::= after rule name %q, found %s", name, p.found(p.pos))
	}
	p.pos += 3
	p.skipSpace(true)
	body, err := p.alternates()
	if err != nil {
		return err
	}
	if at, dup := p.defAt[name]; dup {
		l := syntaxErr("gbnf", p.src, at, "").Line
		return p.errAt(start, "rule %q is defined twice (first on line %d)", name, l)
	}
	p.defAt[name] = start
	p.rules[name] = body
	return nil
}

// found describes what is at i, for error messages.
func (p *gbnfParser) found(i int) string {
	if i >= len(p.src) {
		return "the end of the grammar"
	}
	r, _ := utf8.DecodeRuneInString(p.src[i:])
	if r == '\n' {
		return "the end of the line"
	}
	return strconv.QuoteRune(r)
}

func (p *gbnfParser) alternates() (*Expr, error) {
	var alts []*Expr
	for {
		seq, err := p.sequence()
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.pos >= len(p.src) || p.src[p.pos] != '|' {
			return single(KindAlt, alts), nil
		}
		p.pos++
		p.skipSpace(true)
	}
}

func (p *gbnfParser) sequence() (*Expr, error) {
	var items []*Expr
	for {
		p.skipSpace(p.depth > 0)
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '\n' { // depth 0: the rule goes on unless a new rule (or the end) comes next
			next := p.spaceEnd(p.pos, true)
			if next >= len(p.src) || p.ruleStartAt(next) {
				break
			}
			p.pos = next
			continue
		}
		if c == '|' {
			break
		}
		if c == ')' {
			if p.depth == 0 {
				return nil, p.errAt(p.pos, "unmatched )")
			}
			break
		}
		at := p.pos
		e, err := p.atom()
		if err != nil {
			return nil, err
		}
		if e, err = p.postfix(e, at); err != nil {
			return nil, err
		}
		items = append(items, e)
	}
	return single(KindSeq, items), nil
}

func (p *gbnfParser) atom() (*Expr, error) {
	start := p.pos
	switch c := p.src[p.pos]; {
	case c == '"':
		return p.literal()
	case c == '[':
		return p.class()
	case c == '.':
		p.pos++
		return Re(`(?s:.)`), nil
	case c == '(':
		if q := p.spaceEnd(p.pos+1, true); q < len(p.src) && p.src[q] == '=' {
			return nil, p.errAt(start, "lookahead assertions (= ...) are not supported")
		}
		p.pos++
		if p.depth++; p.depth > maxNesting {
			return nil, p.errAt(start, "parentheses nest deeper than %d", maxNesting)
		}
		p.skipSpace(true)
		e, err := p.alternates()
		if err != nil {
			return nil, err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, p.errAt(start, "unclosed ( (no matching ) before %s)", p.found(p.pos))
		}
		p.pos++
		p.depth--
		return e, nil
	case isNameByte(c):
		end := p.nameEnd(start)
		name := p.src[start:end]
		if p.ruleStartAt(start) {
			if p.depth > 0 {
				return nil, p.errAt(start, "rule %q starts inside parentheses (a ) is missing before it)", name)
			}
			return nil, p.errAt(start, "rule %q must start on a line of its own", name)
		}
		if _, seen := p.useAt[name]; !seen {
			p.useAt[name] = start
		}
		p.pos = end
		return Ref(name), nil
	case c == '<':
		return nil, p.errAt(start, "token references (<...>) are not supported; write the text as a string")
	case c == '*' || c == '+' || c == '?' || c == '{':
		return nil, p.errAt(start, "%c has nothing before it to repeat", c)
	case c == ':' && len(p.src)-start >= 3 && p.src[start:start+3] == "::=":
		return nil, p.errAt(start, "::= without a rule name before it on the line")
	}
	return nil, p.errAt(start, "unexpected %s", p.found(start))
}

// postfix applies any `* + ? {m,n}` after the item that started at at.
func (p *gbnfParser) postfix(e *Expr, at int) (*Expr, error) {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case '*':
			e = Star(e)
		case '+':
			e = Plus(e)
		case '?':
			e = Opt(e)
		case '{':
			lo, hi, err := p.braces()
			if err != nil {
				return nil, err
			}
			e = Rep(e, lo, hi)
			continue
		default:
			return e, nil
		}
		p.pos++
	}
	return e, nil
}

// braces reads {m}, {m,}, {m,n} or {,n}.
func (p *gbnfParser) braces() (lo, hi int, err error) {
	open := p.pos
	p.pos++
	num := func() (int, bool, error) {
		p.skipSpace(false)
		s := p.pos
		for p.pos < len(p.src) && '0' <= p.src[p.pos] && p.src[p.pos] <= '9' {
			p.pos++
		}
		if s == p.pos {
			return 0, false, nil
		}
		n, err := strconv.Atoi(p.src[s:p.pos])
		if err != nil || n > maxRepeat {
			return 0, false, p.errAt(s, "repeat count %s is over %d", p.src[s:p.pos], maxRepeat)
		}
		p.skipSpace(false)
		return n, true, nil
	}
	lo, haveLo, err := num()
	if err != nil {
		return 0, 0, err
	}
	hi = lo
	if p.pos < len(p.src) && p.src[p.pos] == ',' {
		p.pos++
		var haveHi bool
		if hi, haveHi, err = num(); err != nil {
			return 0, 0, err
		}
		if !haveHi {
			hi = -1
		}
	} else if !haveLo {
		return 0, 0, p.errAt(p.pos, "expected a number in {m,n}, found %s", p.found(p.pos))
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '}' {
		return 0, 0, p.errAt(p.pos, "expected } to close the repeat opened at column %d, found %s", syntaxErr("", p.src, open, "").Col, p.found(p.pos))
	}
	p.pos++
	if hi >= 0 && hi < lo {
		return 0, 0, p.errAt(open, "repeat {%d,%d}: the maximum is below the minimum", lo, hi)
	}
	return lo, hi, nil
}
