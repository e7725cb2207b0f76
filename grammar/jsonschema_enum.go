// This file applies "not" forms to merged constraints and emits enum/const values that
// satisfy every other constraint.

package grammar

import "math/big"

// applyNots honours the forms of "not" that remove types, forbid enum values or forbid a
// property; not(not X) was merged as X by flatten, not(anyOf) splits (De Morgan).
func (c *schemaCompiler) applyNots(m *msch) {
	work := append([]*jv{}, m.nots...)
	for len(work) > 0 {
		x := work[0]
		work = work[1:]
		if onlyKey(x, "$ref") {
			x = c.resolve(x, x.get("$ref"))
		}
		var keys []string
		if x.kind == jObj {
			for _, k := range x.keys {
				if !annotation[k] {
					keys = append(keys, k)
				}
			}
		}
		switch {
		case x.kind == jBool:
			if x.b {
				m.types = 0
			}
		case len(keys) == 0:
			m.types = 0
		case onlyKey(x, "not"):
			// merged by flatten
		case len(keys) == 1 && keys[0] == "anyOf" && x.get("anyOf").kind == jArr:
			work = append(work, x.get("anyOf").arr...)
		case len(keys) == 1 && keys[0] == "type":
			sub := &msch{types: tAll}
			c.mergeOne(sub, x)
			m.types &^= sub.types
		case len(keys) == 1 && (keys[0] == "enum" || keys[0] == "const"):
			var vals []*jv
			if keys[0] == "enum" && x.get("enum").kind == jArr {
				vals = x.get("enum").arr
			} else {
				vals = []*jv{x.get(keys[0])}
			}
			if m.hasEnum {
				var keep []*jv
				for _, v := range m.enum {
					bad := false
					for _, w := range vals {
						bad = bad || equalJV(v, w)
					}
					if !bad {
						keep = append(keep, v)
					}
				}
				m.enum = keep
				continue
			}
			for _, v := range vals {
				switch {
				case kindBits(v)&m.types == 0:
				case v.kind == jStr:
					m.notStrings = append(m.notStrings, v.s)
				case v.kind == jNull:
					m.types &^= tNull
				case v.kind == jBool:
					m.notBools = append(m.notBools, v.String())
				default:
					unsupported("not", m.at)
				}
			}
		case len(keys) == 1 && keys[0] == "required" && x.get("required").kind == jArr && len(x.get("required").arr) == 1 && x.get("required").arr[0].kind == jStr:
			// Objects without that property (anything else has every required property).
			m.types &= tObj
			m.forbidden = append(m.forbidden, x.get("required").arr[0].s)
		default:
			unsupported("not", m.at)
		}
	}
}

// annotation keywords never change what validates.
var annotation = map[string]bool{"description": true, "title": true, "$comment": true, "examples": true, "default": true, "$schema": true, "$id": true, "id": true,
	"definitions": true, "$defs": true, "$anchor": true, "readOnly": true, "writeOnly": true, "deprecated": true, "example": true}

// emitEnum is the enum values that satisfy every other constraint, as literals.
func (c *schemaCompiler) emitEnum(m *msch) *Expr {
	var alts []*Expr
	seen := map[string]bool{}
	var rest *IR // the schema without its enum, for values valueOK cannot judge
	for _, v := range m.enum {
		if (v.kind == jObj && len(m.objs) > 0 || v.kind == jArr && (len(m.arrs) > 0 || m.unique || len(m.contains) > 0)) && kindBits(v)&m.types != 0 {
			if m.unique {
				unsupported("uniqueItems", m.at)
			}
			if rest == nil {
				r := *m
				r.hasEnum, r.enum = false, nil
				e := c.emit(&r)
				rest = &IR{Start: "enum rest", Rules: map[string]*Expr{"enum rest": e}}
				for k, e := range c.rules {
					rest.Rules[k] = e // rules still being compiled are empty: values are only dropped
				}
			}
			if !rest.Match([]byte(c.inSchemaOrder(v, m).String())) {
				continue
			}
		} else if !c.valueOK(v, m) {
			continue
		}
		for _, s := range spellings(v) {
			if !seen[s] {
				seen[s] = true
				alts = append(alts, Lit(s))
			}
		}
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return Alt(alts...)
}

// spellings is the compact JSON of v, and for an integral number also its plain integer form.
func spellings(v *jv) []string {
	s := v.String()
	if v.kind != jNum {
		return []string{s}
	}
	out := []string{s}
	if r := v.rat(); r != nil && r.IsInt() {
		if t := r.Num().String(); t != s {
			out = append(out, t)
		}
	}
	return out
}

// valueOK checks an enum value against the merged constraints (exactly, or refuses).
func (c *schemaCompiler) valueOK(v *jv, m *msch) bool {
	switch v.kind {
	case jNull:
		return m.types&tNull != 0
	case jBool:
		return m.types&tBool != 0 && !containsStr(m.notBools, v.String())
	case jNum:
		r := v.rat()
		if r == nil {
			return false
		}
		if r.IsInt() && m.types&tInt == 0 || !r.IsInt() && m.types&tNum == 0 {
			return false
		}
		if m.lo.v != nil && (r.Cmp(m.lo.v) < 0 || m.lo.excl && r.Cmp(m.lo.v) == 0) {
			return false
		}
		if m.hi.v != nil && (r.Cmp(m.hi.v) > 0 || m.hi.excl && r.Cmp(m.hi.v) == 0) {
			return false
		}
		for _, k := range m.mult {
			if !new(big.Rat).Quo(r, k).IsInt() {
				return false
			}
		}
		return true
	case jStr:
		if m.types&tStr == 0 || containsStr(m.notStrings, v.s) {
			return false
		}
		n := len([]rune(v.s))
		if n < m.minLen || m.maxLen >= 0 && n > m.maxLen {
			return false
		}
		for _, p := range m.patterns {
			re, err := ecmaRegexp(p)
			if err != nil {
				unsupported("pattern", m.at+": "+err.Error())
			}
			if !re.MatchString(v.s) {
				return false
			}
		}
		for _, f := range m.formats {
			if !formatRegexp(f).MatchString(v.s) {
				return false
			}
		}
		return true
	case jArr:
		if m.types&tArr == 0 {
			return false
		}
		if len(m.arrs) > 0 || m.unique || len(m.contains) > 0 {
			unsupported("enum", m.at+" (array values with item constraints)")
		}
		return len(v.arr) >= m.minItems && (m.maxItems < 0 || len(v.arr) <= m.maxItems)
	}
	if m.types&tObj == 0 {
		return false
	}
	for _, f := range m.forbidden {
		if v.get(f) != nil {
			return false
		}
	}
	if len(m.objs) > 0 {
		unsupported("enum", m.at+" (object values with property constraints)")
	}
	return len(v.keys) >= m.minProps && (m.maxProps < 0 || len(v.keys) <= m.maxProps)
}

// inSchemaOrder copies an object value with its keys in the order the grammar emits them
// (named properties first, in schema order), for checking it against the grammar.
func (c *schemaCompiler) inSchemaOrder(v *jv, m *msch) *jv {
	if v.kind != jObj {
		return v
	}
	var order []string
	for _, n := range m.objs {
		if p := n.get("properties"); p != nil && p.kind == jObj {
			order = append(order, p.keys...)
		}
	}
	order = append(order, m.forbidden...)
	for _, n := range m.objs {
		if r := n.get("required"); r != nil && r.kind == jArr {
			for _, x := range r.arr {
				order = append(order, x.s)
			}
		}
	}
	out := &jv{kind: jObj}
	done := map[string]bool{}
	for _, k := range order {
		if x := v.get(k); x != nil && !done[k] {
			done[k] = true
			out.keys, out.vals = append(out.keys, k), append(out.vals, x)
		}
	}
	for i, k := range v.keys {
		if !done[k] {
			out.keys, out.vals = append(out.keys, k), append(out.vals, v.vals[i])
		}
	}
	return out
}
