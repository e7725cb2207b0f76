// This file emits arrays (prefixItems / draft-04 items arrays, then the rest, with item count
// bounds), punctuation with optional whitespace, and the any-JSON-value rules.

package grammar

import "regexp"

// arrSpec is one conjunct's array keywords: items by position, then the rest.
type arrSpec struct {
	prefix []*jv
	rest   *jv
}

func (c *schemaCompiler) arrayExpr(m *msch) *Expr {
	type spec = arrSpec
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
		return c.empty("minItems/maxItems at %s: no count in range", m.at)
	}
	n := 0
	for _, sp := range specs {
		n = max(n, len(sp.prefix))
	}
	if len(m.contains) > 0 {
		return c.containsArray(m, specs, n, lo, hi)
	}
	if m.unique && !(hi >= 0 && hi <= 1) {
		var restNodes []*jv
		for _, sp := range specs {
			if sp.rest != nil {
				restNodes = append(restNodes, sp.rest)
			}
		}
		if n > 0 || len(restNodes) == 0 {
			unsupported("uniqueItems", m.at)
		}
		return c.uniqueArray(restNodes, lo, hi, m.at)
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

// uniqueArray: arrays of distinct items drawn from a small finite set (an enum, booleans,
// null), one rule per set of values used so far.
func (c *schemaCompiler) uniqueArray(items []*jv, lo, hi int, at string) *Expr {
	k, ok := c.flatten(conj{nodes: items})
	if !ok {
		return c.uniqueOf(nil, lo, hi, at)
	}
	for _, n := range k.nodes {
		for _, kw := range []string{"anyOf", "oneOf", "if", "dependencies"} {
			if n.get(kw) != nil {
				unsupported("uniqueItems", at)
			}
		}
	}
	im := c.merge(k)
	c.applyNots(im)
	var vals [][]string // spellings of each distinct value
	if im.hasEnum {
		for _, v := range im.enum {
			if v.kind == jObj || v.kind == jArr {
				unsupported("uniqueItems", at)
			}
			if c.valueOK(v, im) {
				vals = append(vals, spellings(v))
			}
		}
	} else {
		if im.types&^(tNull|tBool) != 0 {
			unsupported("uniqueItems", at)
		}
		if im.types&tNull != 0 {
			vals = append(vals, []string{"null"})
		}
		if im.types&tBool != 0 {
			vals = append(vals, []string{"true"}, []string{"false"})
		}
	}
	return c.uniqueOf(vals, lo, hi, at)
}

func (c *schemaCompiler) uniqueOf(vals [][]string, lo, hi int, at string) *Expr {
	if len(vals) > 6 {
		unsupported("uniqueItems", at+" (more than 6 possible items)")
	}
	names := map[int]string{}
	var rule func(used int, count int) *Expr
	rule = func(used, count int) *Expr {
		if name, ok := names[used]; ok {
			return Ref(name)
		}
		var alts []*Expr
		if count >= lo {
			alts = append(alts, Seq())
		}
		if hi < 0 || count < hi {
			for i, sp := range vals {
				if used&(1<<i) != 0 {
					continue
				}
				var lits []*Expr
				for _, s := range sp {
					lits = append(lits, Lit(s))
				}
				item := Alt(lits...)
				if count > 0 {
					item = Seq(c.punct(","), item)
				}
				alts = append(alts, Seq(item, rule(used|1<<i, count+1)))
			}
		}
		name := c.newRule()
		c.rules[name] = Alt(alts...)
		names[used] = name
		return Ref(name)
	}
	return Seq(c.punct("["), rule(0, 0), c.punct("]"))
}

// containsArray: arrays with an item matching the contains schema: items before it, that
// item, items after it (every item also satisfies items). Only without prefixItems, one
// contains, minItems <= 1 and no maxItems.
func (c *schemaCompiler) containsArray(m *msch, specs []arrSpec, n, lo, hi int) *Expr {
	if n > 0 || len(m.contains) > 1 || lo > 1 || hi >= 0 || m.unique {
		unsupported("contains", m.at)
	}
	var restNodes []*jv
	for _, sp := range specs {
		if sp.rest != nil {
			restNodes = append(restNodes, sp.rest)
		}
	}
	item := c.anyValue()
	if len(restNodes) > 0 {
		item = c.conj(conj{nodes: restNodes}, m.at+"/items")
	}
	hit := c.conj(conj{nodes: append(restNodes, m.contains[0])}, m.at+"/contains")
	if isNothing(hit) {
		return Alt()
	}
	comma := c.punct(",")
	body := Seq(Star(Seq(item, comma)), hit, Star(Seq(comma, item)))
	return Seq(c.punct("["), body, c.punct("]"))
}
