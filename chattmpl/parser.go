// This file implements the parser: tokens to syntax tree, with the reference's grammar and
// operator precedence (ternary < or < and < not < comparison/in < + - ~ < * / // % < ** <
// is-tests < filters < unary sign < call/member < primary).
package chattmpl

import (
	"strings"
)

// Template is a parsed chat template.
type Template struct {
	src  string
	body []node
}

type parser struct {
	src  string
	toks []token
	i    int
}

type syntaxErr struct{ err error }

// Parse parses a template; errors carry the line:col of the offending token.
func Parse(src string) (t *Template, err error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxErr)
			if !ok {
				panic(r)
			}
			t, err = nil, se.err
		}
	}()
	var body []node
	for p.i < len(p.toks) {
		body = append(body, p.parseAny())
	}
	return &Template{src: src, body: body}, nil
}

func (p *parser) fail(format string, args ...any) {
	off := len(p.src)
	if p.i < len(p.toks) {
		off = p.toks[p.i].pos
	}
	line, col := lineCol(p.src, off)
	panic(syntaxErr{&Error{Line: line, Col: col, Msg: sprintf(format, args...)}})
}

func (p *parser) pos() int {
	if p.i < len(p.toks) {
		return p.toks[p.i].pos
	}
	return len(p.src)
}

func (p *parser) is(types ...tokType) bool {
	if p.i+len(types) > len(p.toks) {
		return false
	}
	for k, t := range types {
		if p.toks[p.i+k].typ != t {
			return false
		}
	}
	return true
}

func (p *parser) isIdent(names ...string) bool {
	if p.i+len(names) > len(p.toks) {
		return false
	}
	for k, n := range names {
		if t := p.toks[p.i+k]; t.typ != tIdent || t.val != n {
			return false
		}
	}
	return true
}

func (p *parser) isStatement(names ...string) bool {
	if p.i+1 >= len(p.toks) {
		if p.i >= len(p.toks) {
			p.fail("unexpected end of template, expected {%% %s %%}", strings.Join(names, " or "))
		}
		return false
	}
	if p.toks[p.i].typ != tOpenStmt || p.toks[p.i+1].typ != tIdent {
		return false
	}
	for _, n := range names {
		if p.toks[p.i+1].val == n {
			return true
		}
	}
	return false
}

func (p *parser) next() token {
	if p.i >= len(p.toks) {
		p.fail("unexpected end of template")
	}
	t := p.toks[p.i]
	p.i++
	return t
}

func (p *parser) expect(typ tokType, what string) token {
	if p.i >= len(p.toks) {
		p.fail("%s, got end of template", what)
	}
	if p.toks[p.i].typ != typ {
		p.fail("%s, got %s %q", what, p.toks[p.i].typ, p.toks[p.i].val)
	}
	return p.next()
}

func (p *parser) expectIdent(name string) {
	if !p.isIdent(name) {
		p.fail("expected %s", name)
	}
	p.i++
}

func (p *parser) parseAny() node {
	t := p.toks[p.i]
	switch t.typ {
	case tComment:
		p.i++
		return &commentNode{base{t.pos}}
	case tText:
		p.i++
		return &textNode{base{t.pos}, t.val}
	case tOpenStmt:
		return p.parseStatement()
	case tOpenExpr:
		p.i++
		e := p.parseExpr()
		p.expect(tCloseExpr, "expected '}}'")
		return e
	}
	p.fail("unexpected token %s %q", t.typ, t.val)
	return nil
}

func (p *parser) endTag(name string) {
	p.expect(tOpenStmt, "expected {% "+name+" %}")
	p.expectIdent(name)
	p.expect(tCloseStmt, "expected '%}'")
}

func (p *parser) parseStatement() node {
	p.expect(tOpenStmt, "expected '{%'")
	if !p.is(tIdent) {
		p.fail("unknown statement")
	}
	at := p.pos()
	name := p.next().val
	switch name {
	case "set":
		return p.parseSet(at)
	case "if":
		n := p.parseIf(at)
		p.endTag("endif")
		return n
	case "macro":
		nm := p.parsePrimary()
		id, ok := nm.(*identNode)
		if !ok {
			p.fail("expected identifier following macro statement")
		}
		params := p.parseArgs(true)
		p.expect(tCloseStmt, "expected '%}'")
		var body []node
		for !p.isStatement("endmacro") {
			body = append(body, p.parseAny())
		}
		p.endTag("endmacro")
		return &macroNode{base{at}, id.name, params, body}
	case "for":
		n := p.parseFor(at)
		p.endTag("endfor")
		return n
	case "call":
		var callerParams []node
		if p.is(tOpenParen) {
			callerParams = p.parseArgs(true)
		}
		callee := p.parsePrimary()
		if _, ok := callee.(*identNode); !ok {
			p.fail("expected identifier following call statement")
		}
		args := p.parseArgs(false)
		p.expect(tCloseStmt, "expected '%}'")
		var body []node
		for !p.isStatement("endcall") {
			body = append(body, p.parseAny())
		}
		p.endTag("endcall")
		return &callBlockNode{base{at}, &callNode{base{at}, callee, args}, callerParams, body}
	case "break":
		p.expect(tCloseStmt, "expected '%}'")
		return &breakNode{base{at}}
	case "continue":
		p.expect(tCloseStmt, "expected '%}'")
		return &continueNode{base{at}}
	case "filter":
		fpos := p.pos()
		id, ok := p.parsePrimary().(*identNode)
		if !ok {
			p.fail("expected filter name")
		}
		f := &filterNode{base: base{fpos}, name: id.name}
		if p.is(tOpenParen) {
			f.args, f.hasCall = p.parseArgs(false), true
		}
		p.expect(tCloseStmt, "expected '%}'")
		var body []node
		for !p.isStatement("endfilter") {
			body = append(body, p.parseAny())
		}
		p.endTag("endfilter")
		return &filterBlockNode{base{at}, f, body}
	}
	p.i--
	p.fail("unknown statement type: %s", name)
	return nil
}

func (p *parser) parseSet(at int) node {
	target := p.parseSequence(false)
	switch t := target.(type) {
	case *identNode, *tupleNode:
	case *memberNode:
		if t.computed {
			p.fail("cannot assign to a subscript")
		}
	default:
		p.fail("invalid assignment target")
	}
	n := &setNode{base: base{at}, target: target}
	if p.is(tEquals) {
		p.i++
		n.value = p.parseSequence(false)
	} else {
		p.expect(tCloseStmt, "expected '=' or '%}'")
		for !p.isStatement("endset") {
			n.body = append(n.body, p.parseAny())
		}
		p.expect(tOpenStmt, "expected '{%'")
		p.expectIdent("endset")
	}
	p.expect(tCloseStmt, "expected '%}'")
	return n
}

func (p *parser) parseIf(at int) node {
	test := p.parseExpr()
	p.expect(tCloseStmt, "expected '%}'")
	n := &ifNode{base: base{at}, test: test}
	for !p.isStatement("elif", "else", "endif") {
		n.body = append(n.body, p.parseAny())
	}
	if p.isStatement("elif") {
		p.i += 2
		n.alt = []node{p.parseIf(p.pos())}
	} else if p.isStatement("else") {
		p.i += 2
		p.expect(tCloseStmt, "expected '%}'")
		for !p.isStatement("endif") {
			n.alt = append(n.alt, p.parseAny())
		}
	}
	return n
}

func (p *parser) parseFor(at int) node {
	target := p.parseSequence(true)
	switch target.(type) {
	case *identNode, *tupleNode:
	default:
		p.fail("expected identifier/tuple for the loop variable")
	}
	if !p.isIdent("in") {
		p.fail("expected 'in' keyword following loop variable")
	}
	p.i++
	iter := p.parseExpr()
	p.expect(tCloseStmt, "expected '%}'")
	n := &forNode{base: base{at}, target: target, iter: iter}
	for !p.isStatement("endfor", "else") {
		n.body = append(n.body, p.parseAny())
	}
	if p.isStatement("else") {
		p.i += 2
		p.expect(tCloseStmt, "expected '%}'")
		for !p.isStatement("endfor") {
			n.alt = append(n.alt, p.parseAny())
		}
	}
	return n
}

func (p *parser) parseSequence(primary bool) node {
	at := p.pos()
	parse := p.parseExpr
	if primary {
		parse = p.parsePrimary
	}
	first := parse()
	if !p.is(tComma) {
		return first
	}
	items := []node{first}
	for p.is(tComma) {
		p.i++
		items = append(items, parse())
	}
	return &tupleNode{base{at}, items}
}
