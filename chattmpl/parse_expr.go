// This file implements expression parsing: ternary/select, or/and/not, comparisons, arithmetic,
// is-tests, filters, unary signs, calls, member access, slices and literals.
package chattmpl

import (
	"strconv"
	"strings"
)

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
