// This file parses Lark's EBNF as llguidance and vLLM accept it: rules (`name: a b | c`,
// lower case, starting at "start"), terminals (`NAME: "lit" | /regex/flags`, UPPER case),
// `? * +`, `[optional]`, `~ n` and `~ n..m`, `"a".."z"`, `"lit"i`, aliases (`-> name`,
// dropped), `%ignore` and `%import common.X`. lark_ir.go turns the result into the IR.

package grammar

import (
	"strconv"
	"strings"
)

type larkParser struct {
	src    string
	toks   []larkTok
	i      int
	depth  int    // open ( and [
	inTerm string // the terminal being defined, "" in a rule
	rules  map[string]*Expr
	terms  map[string]*Expr
	defAt  map[string]int
	useAt  map[string]int
	ignore []*Expr
	jsons  map[string]*Expr // rules of the %json schemas, by their prefixed names
	// jsonStarts are the start rules of the %json schemas: a whole token each for %ignore.
	jsonStarts []string
}

func parseLark(src string) (*IR, error) {
	toks, err := larkLex(src)
	if err != nil {
		return nil, err
	}
	p := &larkParser{src: src, toks: toks, rules: map[string]*Expr{}, terms: map[string]*Expr{},
		defAt: map[string]int{}, useAt: map[string]int{}, jsons: map[string]*Expr{}}
	if err := p.file(); err != nil {
		return nil, err
	}
	return p.build()
}

func (p *larkParser) errAt(pos int, msg string, args ...any) error {
	return syntaxErr("lark", p.src, pos, msg, args...)
}

// peek returns the next token. Line breaks are skipped inside brackets, and before a `|`
// that continues the alternatives on the next line.
func (p *larkParser) peek() larkTok {
	j := p.i
	for p.toks[j].kind == ltNL {
		j++
	}
	if j != p.i && (p.depth > 0 || p.toks[j].kind == ltPunct && p.toks[j].text == "|") {
		p.i = j
	}
	return p.toks[p.i]
}

func (p *larkParser) next() larkTok {
	t := p.peek()
	if t.kind != ltEOF {
		p.i++
	}
	return t
}

func (p *larkParser) isPunct(t larkTok, s string) bool { return t.kind == ltPunct && t.text == s }

func (p *larkParser) describe(t larkTok) string {
	switch t.kind {
	case ltEOF:
		return "the end of the grammar"
	case ltNL:
		return "the end of the line"
	case ltString:
		return "string " + strconv.Quote(t.text)
	case ltRegex:
		return "regex /" + t.text + "/"
	case ltDirective:
		return "%" + t.text
	}
	return strconv.Quote(t.text)
}

func (p *larkParser) file() error {
	for {
		t := p.toks[p.i]
		switch {
		case t.kind == ltEOF:
			return nil
		case t.kind == ltNL:
			p.i++
			continue
		case t.kind == ltDirective:
			if err := p.directive(); err != nil {
				return err
			}
		default:
			if err := p.definition(); err != nil {
				return err
			}
		}
		if t := p.toks[p.i]; t.kind != ltNL && t.kind != ltEOF {
			return p.errAt(t.pos, "expected the end of the line, found %s", p.describe(t))
		}
	}
}

// nameKind says whether name is a rule ("rule"), a terminal ("terminal") or neither ("").
func nameKind(name string) string {
	s := strings.TrimLeft(name, "_")
	switch {
	case s == "":
		return ""
	case s == strings.ToUpper(s) && 'A' <= s[0] && s[0] <= 'Z':
		return "terminal"
	case 'a' <= s[0] && s[0] <= 'z' && s == strings.ToLower(s):
		return "rule"
	}
	return ""
}

func (p *larkParser) definition() error {
	t := p.next()
	if p.isPunct(t, "?") || p.isPunct(t, "!") {
		t = p.next()
	}
	if t.kind != ltName {
		return p.errAt(t.pos, "expected a rule or terminal definition (name: ...), found %s", p.describe(t))
	}
	kind := nameKind(t.text)
	if kind == "" {
		return p.errAt(t.pos, "%q is neither a rule name (lower case) nor a terminal name (UPPER case)", t.text)
	}
	if p.isPunct(p.peek(), "{") {
		return p.errAt(p.peek().pos, "rule templates (%s{...}) are not supported", t.text)
	}
	if p.isPunct(p.peek(), ".") { // priority: dropped (it steers Lark's lexer, not the language)
		p.next()
		if p.isPunct(p.peek(), "-") {
			p.next()
		}
		if n := p.next(); n.kind != ltNumber {
			return p.errAt(n.pos, "expected a priority number after %s., found %s", t.text, p.describe(n))
		}
	}
	if c := p.next(); !p.isPunct(c, ":") {
		return p.errAt(c.pos, "expected : after %s, found %s", t.text, p.describe(c))
	}
	if err := p.define(t.text, t.pos); err != nil {
		return err
	}
	if kind == "terminal" {
		p.inTerm = t.text
	}
	e, err := p.expansions()
	p.inTerm = ""
	if err != nil {
		return err
	}
	if kind == "terminal" {
		p.terms[t.text] = e
	} else {
		p.rules[t.text] = e
	}
	return nil
}

func (p *larkParser) define(name string, pos int) error {
	if at, dup := p.defAt[name]; dup {
		return p.errAt(pos, "%s is defined twice (first on line %d)", name, syntaxErr("", p.src, at, "").Line)
	}
	p.defAt[name] = pos
	return nil
}

func (p *larkParser) expansions() (*Expr, error) {
	var alts []*Expr
	for {
		var items []*Expr
		for {
			t := p.peek()
			if t.kind == ltEOF || t.kind == ltNL || t.kind == ltPunct && (t.text == "|" || t.text == ")" || t.text == "]" || t.text == "->") {
				break
			}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			items = append(items, e)
		}
		alts = append(alts, single(KindSeq, items))
		if p.isPunct(p.peek(), "->") { // alias: names the tree node, no change to the language
			p.next()
			if n := p.next(); n.kind != ltName {
				return nil, p.errAt(n.pos, "expected a name after ->, found %s", p.describe(n))
			}
		}
		if !p.isPunct(p.peek(), "|") {
			return single(KindAlt, alts), nil
		}
		p.next()
	}
}

func (p *larkParser) expr() (*Expr, error) {
	e, err := p.atom()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case p.isPunct(t, "?"):
			e = Opt(e)
		case p.isPunct(t, "*"):
			e = Star(e)
		case p.isPunct(t, "+"):
			e = Plus(e)
		case p.isPunct(t, "~"):
			p.next()
			lo, err := p.count()
			if err != nil {
				return nil, err
			}
			hi := lo
			if p.isPunct(p.peek(), "..") {
				p.next()
				if hi, err = p.count(); err != nil {
					return nil, err
				}
				if hi < lo {
					return nil, p.errAt(t.pos, "repeat ~ %d..%d: the maximum is below the minimum", lo, hi)
				}
			}
			e = Rep(e, lo, hi)
			continue
		default:
			return e, nil
		}
		p.next()
	}
}

func (p *larkParser) count() (int, error) {
	t := p.next()
	if t.kind != ltNumber {
		return 0, p.errAt(t.pos, "expected a number after ~, found %s", p.describe(t))
	}
	n, err := strconv.Atoi(t.text)
	if err != nil || n > maxRepeat {
		return 0, p.errAt(t.pos, "repeat count %s is over %d", t.text, maxRepeat)
	}
	return n, nil
}

func (p *larkParser) atom() (*Expr, error) {
	t := p.next()
	switch {
	case p.isPunct(t, "(") || p.isPunct(t, "["):
		closer := map[string]string{"(": ")", "[": "]"}[t.text]
		if p.depth++; p.depth > maxNesting {
			return nil, p.errAt(t.pos, "brackets nest deeper than %d", maxNesting)
		}
		e, err := p.expansions()
		if err != nil {
			return nil, err
		}
		p.depth--
		if c := p.next(); !p.isPunct(c, closer) {
			return nil, p.errAt(t.pos, "unclosed %s (no matching %s before %s)", t.text, closer, p.describe(c))
		}
		if t.text == "[" {
			e = Opt(e)
		}
		return e, nil
	case t.kind == ltString:
		if p.isPunct(p.peek(), "..") {
			p.next()
			return p.charRange(t, p.next())
		}
		if t.text == "" {
			return Seq(), nil
		}
		if t.flags == "i" {
			return Re("(?i:" + quoteMeta(t.text) + ")"), nil
		}
		return Lit(t.text), nil
	case t.kind == ltRegex:
		return p.regex(t)
	case t.kind == ltName:
		kind := nameKind(t.text)
		if kind == "" {
			return nil, p.errAt(t.pos, "%q is neither a rule name (lower case) nor a terminal name (UPPER case)", t.text)
		}
		if p.isPunct(p.peek(), "{") {
			return nil, p.errAt(p.peek().pos, "rule templates (%s{...}) are not supported", t.text)
		}
		if p.inTerm == "%ignore" && kind == "rule" {
			return nil, p.errAt(t.pos, "%%ignore uses rule %s (it may use only terminals, strings and regexes)", t.text)
		}
		if p.inTerm != "" && kind == "rule" {
			return nil, p.errAt(t.pos, "terminal %s uses rule %s (terminals may use only terminals, strings and regexes)", p.inTerm, t.text)
		}
		if _, seen := p.useAt[t.text]; !seen {
			p.useAt[t.text] = t.pos
		}
		return Ref(t.text), nil
	case t.kind == ltDirective && t.text == "json":
		return p.jsonSchema(p.next())
	case t.kind == ltDirective:
		return nil, p.errAt(t.pos, "%%%s is not supported inside a rule", t.text)
	case p.isPunct(t, "?") || p.isPunct(t, "*") || p.isPunct(t, "+") || p.isPunct(t, "~"):
		return nil, p.errAt(t.pos, "%s has nothing before it to repeat", t.text)
	}
	return nil, p.errAt(t.pos, "unexpected %s", p.describe(t))
}

// charRange is "a".."z": one character from a to z.
func (p *larkParser) charRange(from, to larkTok) (*Expr, error) {
	if to.kind != ltString {
		return nil, p.errAt(to.pos, "expected a string after .., found %s", p.describe(to))
	}
	lo, hi := []rune(from.text), []rune(to.text)
	if len(lo) != 1 || len(hi) != 1 {
		return nil, p.errAt(from.pos, "a range \"a\"..\"z\" needs one character on each side")
	}
	if hi[0] < lo[0] {
		return nil, p.errAt(from.pos, "bad range %q..%q (the end is below the start)", lo[0], hi[0])
	}
	return Re(classRegex([]runeRange{{lo[0], hi[0]}}, false)), nil
}

// regex turns /pattern/flags, a Python regular expression, into a Go one (pythonRegex; flags
// i, m, s; u and l change nothing here; x is refused), checked to parse.
func (p *larkParser) regex(t larkTok) (*Expr, error) {
	if t.text == "" {
		return nil, p.errAt(t.pos, "empty regex")
	}
	var flags []byte
	for _, f := range []byte(t.flags) {
		switch f {
		case 'i', 'm', 's':
			if !strings.ContainsRune(string(flags), rune(f)) {
				flags = append(flags, f)
			}
		case 'x':
			return nil, p.errAt(t.pos, "regex flag x (verbose) is not supported; write the regex without spaces and comments")
		}
	}
	body := pythonRegex(t.text)
	pat := "(?:" + body + ")"
	if len(flags) > 0 {
		pat = "(?" + string(flags) + ":" + body + ")"
	}
	if err := checkRegex(pat); err != nil {
		return nil, p.errAt(t.pos, "regex /%s/: %v", t.text, err)
	}
	return Re(pat), nil
}
