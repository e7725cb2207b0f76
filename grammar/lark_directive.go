// This file reads Lark's directives: %ignore, %import common.X (the terminals themselves are
// in lark_ir.go), %llguidance; and refuses the others by name.

package grammar

func (p *larkParser) directive() error {
	t := p.next()
	switch t.text {
	case "ignore":
		p.inTerm = "%ignore"
		e, err := p.expansions()
		p.inTerm = ""
		if err != nil {
			return err
		}
		p.ignore = append(p.ignore, e)
		return nil
	case "import":
		return p.importDirective(t)
	case "declare":
		return p.errAt(t.pos, "%%declare is not supported (terminals made by a postlexer cannot be constrained)")
	case "llguidance": // llguidance's options (tokenization, limits): no change to the language
		p.next()
		return nil
	case "json":
		return p.errAt(t.pos, "%%json goes inside a rule (start: %%json {...})")
	}
	return p.errAt(t.pos, "directive %%%s is not supported (supported: %%ignore, %%import common.NAME)", t.text)
}

// importDirective reads `%import common.NAME [-> ALIAS]` or `%import common (A, B, ...)`.
func (p *larkParser) importDirective(at larkTok) error {
	mod := p.next()
	if mod.kind != ltName || mod.text != "common" {
		return p.errAt(mod.pos, "only %%import common.NAME is supported (found %s)", p.describe(mod))
	}
	add := func(name, alias larkTok) error {
		re, ok := larkCommon[name.text]
		if !ok {
			return p.errAt(name.pos, "common has no terminal %s (it has %s)", name.text, commonNames())
		}
		if nameKind(alias.text) != "terminal" {
			return p.errAt(alias.pos, "%s must be a terminal name (UPPER case)", alias.text)
		}
		if err := p.define(alias.text, alias.pos); err != nil {
			return err
		}
		p.terms[alias.text] = Re(re)
		return nil
	}
	switch t := p.next(); {
	case p.isPunct(t, "."):
		name := p.next()
		if name.kind != ltName {
			return p.errAt(name.pos, "expected a name after common., found %s", p.describe(name))
		}
		alias := name
		if p.isPunct(p.peek(), "->") {
			p.next()
			if alias = p.next(); alias.kind != ltName {
				return p.errAt(alias.pos, "expected a name after ->, found %s", p.describe(alias))
			}
		}
		return add(name, alias)
	case p.isPunct(t, "("):
		p.depth++
		defer func() { p.depth-- }()
		for {
			name := p.next()
			if name.kind != ltName {
				return p.errAt(name.pos, "expected a terminal name in %%import common (...), found %s", p.describe(name))
			}
			if err := add(name, name); err != nil {
				return err
			}
			switch c := p.next(); {
			case p.isPunct(c, ")"):
				return nil
			case !p.isPunct(c, ","):
				return p.errAt(c.pos, "expected , or ) in %%import common (...), found %s", p.describe(c))
			}
		}
	default:
		return p.errAt(t.pos, "expected . or ( after %%import common, found %s", p.describe(t))
	}
}

// undefined is the error for an undefined name.
func (p *larkParser) undefined(name string) error {
	if nameKind(name) == "terminal" {
		if _, ok := larkCommon[name]; ok {
			return p.errAt(p.useAt[name], "undefined terminal %s (add %%import common.%s)", name, name)
		}
		return p.errAt(p.useAt[name], "undefined terminal %s", name)
	}
	return p.errAt(p.useAt[name], "undefined rule %s", name)
}
