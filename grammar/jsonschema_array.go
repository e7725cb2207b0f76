// This file emits arrays (prefixItems / draft-04 items arrays, then the rest, with item count
// bounds), punctuation with optional whitespace, and the any-JSON-value rules.

package grammar

import "regexp"

func (c *schemaCompiler) arrayExpr(m *msch) *Expr {
	type spec struct {
		prefix []*jv
		rest   *jv
	}
	var specs []spec
	for _, n := range m.arrs {
		items, prefix, addItems := n.get("items"), n.get("prefixItems"), n.get("additionalItems")
		var sp spec
		switch {
		case prefix != nil:
			if prefix.kind != jArr {
				fail("keyword \"prefixItems\" at %s must be an array", c.path[n])
			}
			sp.prefix, sp.rest = prefix.arr, items
		case items != nil && items.kind == jArr:
			sp.prefix, sp.rest = items.arr, addItems
		default:
			sp.rest = items
		}
		specs = append(specs, sp)
	}
	lo, hi := m.minItems, m.maxItems
	if hi >= 0 && lo > hi {
		fail("minItems/maxItems at %s: no count in range", m.at)
	}
	if m.unique && !(hi >= 0 && hi <= 1) {
		unsupported("uniqueItems", m.at)
	}
	n := 0
	for _, sp := range specs {
		n = max(n, len(sp.prefix))
	}
	elems := make([]*Expr, n)
	for i := range elems {
		var nodes []*jv
		for _, sp := range specs {
			if i < len(sp.prefix) {
				nodes = append(nodes, sp.prefix[i])
			} else if sp.rest != nil {
				nodes = append(nodes, sp.rest)
			}
		}
		elems[i] = c.conj(conj{nodes: nodes}, m.at+"/items/"+itoa(i))
	}
	var restNodes []*jv
	for _, sp := range specs {
		if sp.rest != nil {
			restNodes = append(restNodes, sp.rest)
		}
	}
	rest := c.anyValue()
	if len(restNodes) > 0 {
		rest = c.conj(conj{nodes: restNodes}, m.at+"/items")
	}
	if isNothing(rest) {
		rest = nil
	}
	var tail func(i int) *Expr
	tail = func(i int) *Expr {
		if i == n {
			return c.repeatList(rest, max(lo-n, 0), hi-n, hi < 0, i == 0)
		}
		if hi >= 0 && i >= hi {
			return Seq()
		}
		var present *Expr
		if !isNothing(elems[i]) {
			if i == 0 {
				present = Seq(elems[i], tail(i+1))
			} else {
				present = Seq(c.punct(","), elems[i], tail(i+1))
			}
		}
		switch {
		case i < lo && present == nil:
			return Alt()
		case i < lo:
			return present
		case present == nil:
			return Seq()
		}
		return Alt(Seq(), present)
	}
	body := tail(0)
	if isNothing(body) {
		return body
	}
	return Seq(c.punct("["), body, c.punct("]"))
}

const wsRe = `[ \t\n\r]*`

// punct is a structural token, with whitespace around it when allowed.
func (c *schemaCompiler) punct(s string) *Expr {
	if !c.opt.Whitespace {
		return Lit(s)
	}
	return Re(wsRe + regexp.QuoteMeta(s) + wsRe)
}

// keyColon is a property name and the colon after it.
func (c *schemaCompiler) keyColon(name string) *Expr {
	if !c.opt.Whitespace {
		return Lit(jsonString(name) + ":")
	}
	return Re(wsRe + regexp.QuoteMeta(jsonString(name)) + wsRe + ":" + wsRe)
}

// anyValue refers to the rule for any JSON value (defined on first use).
func (c *schemaCompiler) anyValue() *Expr {
	if _, ok := c.rules["value"]; !ok {
		member := Seq(Re(stringRe), c.punct(":"), Ref("value"))
		c.rules["object"] = Seq(c.punct("{"), Opt(Seq(member, Star(Seq(c.punct(","), member)))), c.punct("}"))
		c.rules["array"] = Seq(c.punct("["), Opt(Seq(Ref("value"), Star(Seq(c.punct(","), Ref("value"))))), c.punct("]"))
		c.rules["value"] = Alt(Lit("null"), Lit("true"), Lit("false"), Re(numberRe), Re(stringRe), Ref("object"), Ref("array"))
	}
	return Ref("value")
}
