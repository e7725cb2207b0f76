// This file implements the parser: tokens to syntax tree, with the reference's grammar and
// operator precedence (ternary < or < and < not < comparison/in < + - ~ < * / // % < ** <
// is-tests < filters < unary sign < call/member < primary).
package chattmpl

import (
	"strconv"
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

func (p *parser) parseExpr() node {
	at := p.pos()
	a := p.parseOr()
	if p.isIdent("if") {
		p.i++
		test := p.parseOr()
		if p.isIdent("else") {
			p.i++
			return &ternaryNode{base{at}, test, a, p.parseExpr()}
		}
		return &selectNode{base{at}, a, test}
	}
	return a
}

func (p *parser) parseOr() node {
	l := p.parseAnd()
	for p.isIdent("or") {
		at := p.pos()
		p.i++
		l = &binaryNode{base{at}, "or", l, p.parseAnd()}
	}
	return l
}

func (p *parser) parseAnd() node {
	l := p.parseNot()
	for p.isIdent("and") {
		at := p.pos()
		p.i++
		l = &binaryNode{base{at}, "and", l, p.parseNot()}
	}
	return l
}

func (p *parser) parseNot() node {
	if p.isIdent("not") {
		at := p.pos()
		p.i++
		return &unaryNode{base{at}, "not", p.parseNot()}
	}
	return p.parseComparison()
}

func (p *parser) parseComparison() node {
	l := p.parseAdditive()
	for {
		at := p.pos()
		var op string
		switch {
		case p.isIdent("not", "in"):
			op = "not in"
			p.i += 2
		case p.isIdent("in"):
			op = "in"
			p.i++
		case p.is(tComparison):
			op = p.next().val
		default:
			return l
		}
		l = &binaryNode{base{at}, op, l, p.parseAdditive()}
	}
}

func (p *parser) parseAdditive() node {
	l := p.parseMultiplicative()
	for p.is(tAdditive) {
		t := p.next()
		l = &binaryNode{base{t.pos}, t.val, l, p.parseMultiplicative()}
	}
	return l
}

func (p *parser) parseMultiplicative() node {
	l := p.parsePower()
	for p.is(tMultiplicative) {
		t := p.next()
		l = &binaryNode{base{t.pos}, t.val, l, p.parsePower()}
	}
	return l
}

func (p *parser) parsePower() node {
	l := p.parseTest()
	for p.is(tPower) {
		t := p.next()
		l = &binaryNode{base{t.pos}, "**", l, p.parseTest()}
	}
	return l
}

func (p *parser) parseTest() node {
	x := p.parseFilter()
	for p.isIdent("is") {
		at := p.pos()
		p.i++
		neg := p.isIdent("not")
		if neg {
			p.i++
		}
		id, ok := p.parsePrimary().(*identNode)
		if !ok {
			p.fail("expected identifier for the test")
		}
		t := &testNode{base: base{at}, x: x, negate: neg, name: id.name}
		if p.is(tOpenParen) {
			t.args = p.parseArgs(false)
		}
		x = t
	}
	return x
}

func (p *parser) parseFilter() node {
	x := p.parseUnary()
	for p.is(tPipe) {
		p.i++
		at := p.pos()
		id, ok := p.parsePrimary().(*identNode)
		if !ok {
			p.fail("expected identifier for the filter")
		}
		f := &filterNode{base: base{at}, x: x, name: id.name}
		if p.is(tOpenParen) {
			f.args, f.hasCall = p.parseArgs(false), true
		}
		x = f
	}
	return x
}

func (p *parser) parseUnary() node {
	if p.i < len(p.toks) {
		t := p.toks[p.i]
		if (t.typ == tUnary || t.typ == tAdditive) && (t.val == "-" || t.val == "+") {
			p.i++
			return &unaryNode{base{t.pos}, t.val, p.parseUnary()}
		}
	}
	x := p.parseMember(p.parsePrimary())
	for p.is(tOpenParen) {
		at := p.pos()
		x = p.parseMember(&callNode{base{at}, x, p.parseArgs(false)})
	}
	return x
}

// parseArgs parses a parenthesized argument list; params restricts it to a macro signature.
func (p *parser) parseArgs(params bool) []node {
	p.expect(tOpenParen, "expected '('")
	var args []node
	names := map[string]bool{}
	sawKw := false
	for !p.is(tCloseParen) {
		if p.i >= len(p.toks) {
			p.fail("expected ')'")
		}
		at, startI := p.pos(), p.i
		if !params && p.is(tPower) {
			p.i++
			args = append(args, &kwSpreadNode{base{at}, p.parseExpr()})
			if p.is(tComma) {
				p.i++
			}
			if !p.is(tCloseParen) {
				p.fail("expected ')': ** must be applied to the final argument")
			}
			break
		}
		if !params && p.is(tMultiplicative) && p.toks[p.i].val == "*" {
			p.i++
			args = append(args, &spreadNode{base{at}, p.parseExpr()})
		} else {
			arg := p.parseExpr()
			if p.is(tEquals) {
				p.i++
				id, ok := arg.(*identNode)
				if !ok {
					p.fail("expected identifier for keyword argument")
				}
				arg = &kwargNode{base{at}, id.name, p.parseExpr()}
			}
			if params {
				var name string
				switch a := arg.(type) {
				case *identNode:
					name = a.name
				case *kwargNode:
					name = a.key
				default:
					p.fail("expected identifier for parameter declaration")
				}
				if names[name] {
					p.fail("duplicate parameter name: %s", name)
				}
				names[name] = true
			}
			if _, ok := arg.(*kwargNode); ok {
				sawKw = true
			} else if sawKw {
				p.i = startI
				p.fail("positional arguments must come before keyword arguments")
			}
			args = append(args, arg)
		}
		if p.is(tComma) {
			p.i++
		} else if !p.is(tCloseParen) {
			p.fail("expected ',' or ')'")
		}
	}
	p.expect(tCloseParen, "expected ')'")
	return args
}

func (p *parser) parseMember(x node) node {
	for p.is(tDot) || p.is(tOpenBracket) {
		t := p.next()
		if t.typ == tOpenBracket {
			prop := p.parseSubscript()
			p.expect(tCloseBracket, "expected ']'")
			x = &memberNode{base{t.pos}, x, prop, true}
			continue
		}
		startI := p.i
		prop := p.parsePrimary()
		ok := false
		switch pr := prop.(type) {
		case *identNode:
			ok = true
		case *litNode:
			_, ok = pr.v.(int64)
		}
		if !ok {
			p.i = startI
			p.fail("expected identifier or integer following dot operator")
		}
		x = &memberNode{base{t.pos}, x, prop, false}
	}
	return x
}

func (p *parser) parseSubscript() node {
	at := p.pos()
	var parts []node
	isSlice := false
	for !p.is(tCloseBracket) {
		if p.i >= len(p.toks) {
			p.fail("expected ']'")
		}
		if p.is(tColon) {
			parts = append(parts, nil)
			p.i++
			isSlice = true
		} else {
			parts = append(parts, p.parseExpr())
			if p.is(tColon) {
				p.i++
				isSlice = true
			} else if !p.is(tCloseBracket) {
				p.fail("expected ']'")
			}
		}
	}
	if len(parts) == 0 {
		p.fail("expected at least one argument for member/slice expression")
	}
	if !isSlice {
		return parts[0]
	}
	if len(parts) > 3 {
		p.fail("expected 0-3 arguments for slice expression")
	}
	for len(parts) < 3 {
		parts = append(parts, nil)
	}
	return &sliceNode{base{at}, parts[0], parts[1], parts[2]}
}

func (p *parser) parsePrimary() node {
	if p.i >= len(p.toks) {
		p.fail("unexpected end of template")
	}
	t := p.next()
	switch t.typ {
	case tNumber:
		if strings.Contains(t.val, ".") {
			f, err := strconv.ParseFloat(t.val, 64)
			if err != nil {
				p.i--
				p.fail("bad number %q", t.val)
			}
			return &litNode{base{t.pos}, f}
		}
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(t.val, 64)
			if ferr != nil {
				p.i--
				p.fail("bad number %q", t.val)
			}
			return &litNode{base{t.pos}, f}
		}
		return &litNode{base{t.pos}, n}
	case tString:
		v := t.val
		for p.is(tString) {
			v += p.next().val
		}
		return &litNode{base{t.pos}, v}
	case tIdent:
		return &identNode{base{t.pos}, t.val}
	case tOpenParen:
		e := p.parseSequence(false)
		p.expect(tCloseParen, "expected ')'")
		return e
	case tOpenBracket:
		n := &listNode{base: base{t.pos}}
		for !p.is(tCloseBracket) {
			if p.i >= len(p.toks) {
				p.fail("expected ']'")
			}
			n.items = append(n.items, p.parseExpr())
			if p.is(tComma) {
				p.i++
			} else if !p.is(tCloseBracket) {
				p.fail("expected ',' or ']'")
			}
		}
		p.i++
		return n
	case tOpenBrace:
		n := &dictNode{base: base{t.pos}}
		for !p.is(tCloseBrace) {
			if p.i >= len(p.toks) {
				p.fail("expected '}'")
			}
			n.keys = append(n.keys, p.parseExpr())
			p.expect(tColon, "expected ':' between key and value in dict literal")
			n.vals = append(n.vals, p.parseExpr())
			if p.is(tComma) {
				p.i++
			} else if !p.is(tCloseBrace) {
				p.fail("expected ',' or '}'")
			}
		}
		p.i++
		return n
	}
	p.i--
	p.fail("unexpected token %s %q", t.typ, t.val)
	return nil
}
