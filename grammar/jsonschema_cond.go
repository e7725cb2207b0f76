// This file compiles if/then/else as (if ∧ then) ∨ (¬if ∧ else), for the forms of "if" whose
// negation is a union of schemas the compiler handles: a property's value (enum/const/type),
// required properties, minItems.

package grammar

import "math/big"

func (c *schemaCompiler) distributeIf(k conj, at string) *Expr {
	for _, n := range k.nodes {
		cond := n.get("if")
		if cond == nil || containsNode(k.used, cond) {
			continue
		}
		used := append(append([]*jv{}, k.used...), cond)
		then, els := n.get("then"), n.get("else")
		if then == nil && els == nil {
			return c.conj(conj{nodes: k.nodes, used: used}, at)
		}
		negs, ok := c.negations(cond)
		if !ok {
			unsupported("if", c.path[n])
		}
		branches := [][]*jv{append(append([]*jv{}, k.nodes...), cond)}
		if then != nil {
			branches[0] = append(branches[0], then)
		}
		for _, ng := range negs {
			b := append(append([]*jv{}, k.nodes...), ng)
			if els != nil {
				b = append(b, els)
			}
			branches = append(branches, b)
		}
		var alts []*Expr
		for _, b := range branches {
			if e := c.conj(conj{nodes: b, used: used}, at); !isNothing(e) {
				alts = append(alts, e)
			}
		}
		if len(alts) == 1 {
			return alts[0]
		}
		return Alt(alts...)
	}
	return nil
}

// negations: schemas whose union is the complement of x (made once per x).
func (c *schemaCompiler) negations(x *jv) ([]*jv, bool) {
	if negs, ok := c.negs[x]; ok {
		return negs, negs != nil
	}
	negs := c.buildNegations(x)
	c.negs[x] = negs
	return negs, negs != nil
}

func (c *schemaCompiler) buildNegations(x *jv) []*jv {
	if c.negatable(x) {
		return []*jv{c.notNode(x)}
	}
	if x.kind != jObj {
		return nil
	}
	if onlyKey(x, "$ref") {
		if t := c.tryResolve(x, x.get("$ref").s); t != nil && t != x {
			return c.buildNegations(t)
		}
		return nil
	}
	num := func(v *jv, delta int64) *jv {
		r := v.rat()
		if r == nil || !r.IsInt() {
			return nil
		}
		n := new(big.Int).Add(r.Num(), big.NewInt(delta))
		if n.Sign() < 0 {
			return nil
		}
		return &jv{kind: jNum, s: n.String()}
	}
	// ¬(count >= n) is count <= n-1 for that type; ¬(count <= n) is count >= n+1.
	counts := map[string][3]string{"minLength": {"string", "maxLength", "-"}, "maxLength": {"string", "minLength", "+"},
		"minItems": {"array", "maxItems", "-"}, "maxItems": {"array", "minItems", "+"},
		"minProperties": {"object", "maxProperties", "-"}, "maxProperties": {"object", "minProperties", "+"}}
	bounds := map[string]string{"minimum": "exclusiveMaximum", "maximum": "exclusiveMinimum",
		"exclusiveMinimum": "maximum", "exclusiveMaximum": "minimum"}
	var negs []*jv
	for i, kw := range x.keys {
		v := x.vals[i]
		if cn, ok := counts[kw]; ok {
			delta := int64(1)
			if cn[2] == "-" {
				delta = -1
			}
			lim := num(v, delta)
			if lim == nil {
				if cn[2] == "-" && v.rat() != nil && v.rat().Sign() == 0 {
					continue // count >= 0 always holds: its negation is empty
				}
				return nil
			}
			negs = append(negs, c.synth(x, "type", str(cn[0]), cn[1], lim))
			continue
		}
		if nb, ok := bounds[kw]; ok && v.kind == jNum {
			if x.get("exclusiveMinimum") != nil && x.get("exclusiveMinimum").kind == jBool ||
				x.get("exclusiveMaximum") != nil && x.get("exclusiveMaximum").kind == jBool {
				return nil // draft-04 flags change the meaning
			}
			negs = append(negs, c.synth(x, "type", str("number"), nb, v))
			continue
		}
		switch {
		case annotation[kw]:
		case kw == "type" || kw == "enum" || kw == "const":
			negs = append(negs, c.notNode(c.synth(x, kw, v)))
		case kw == "allOf" && v.kind == jArr:
			for _, sub := range v.arr {
				sn := c.buildNegations(sub)
				if sn == nil {
					return nil
				}
				negs = append(negs, sn...)
			}
		case kw == "required" && v.kind == jArr:
			for _, p := range v.arr {
				if p.kind != jStr {
					return nil
				}
				negs = append(negs, c.synth(x, "type", str("object"), "not", c.requiredNode([]string{p.s})))
			}
		case kw == "properties" && v.kind == jObj:
			for j, p := range v.keys {
				// has p, and p's value fails its schema
				negs = append(negs, c.synth(x, "type", str("object"), "required", strList(p),
					"properties", c.synth(x, p, c.notNode(v.vals[j]))))
			}
		case kw == "minItems" && v.kind == jNum:
			r := v.rat()
			if r == nil || !r.IsInt() || r.Sign() <= 0 {
				return nil
			}
			lim := &jv{kind: jNum, s: new(big.Int).Sub(r.Num(), big.NewInt(1)).String()}
			negs = append(negs, c.synth(x, "type", str("array"), "maxItems", lim))
		default:
			return nil
		}
	}
	if negs == nil {
		negs = []*jv{} // x is always true: its negation is empty
	}
	return negs
}

func str(s string) *jv { return &jv{kind: jStr, s: s} }

func strList(s ...string) *jv {
	l := &jv{kind: jArr}
	for _, x := range s {
		l.arr = append(l.arr, str(x))
	}
	return l
}

// synth makes a schema object from key/value pairs, registered like a schema node.
func (c *schemaCompiler) synth(from *jv, kv ...any) *jv {
	n := &jv{kind: jObj}
	for i := 0; i+1 < len(kv); i += 2 {
		n.keys = append(n.keys, kv[i].(string))
		n.vals = append(n.vals, kv[i+1].(*jv))
	}
	c.index[n] = len(c.index)
	c.path[n] = c.path[from] + "(negated)"
	c.base[n] = c.base[from]
	return n
}

// synthOnce is a synthetic schema shared under a name.
func (c *schemaCompiler) synthOnce(name string, kv ...any) *jv {
	if n, ok := c.shared[name]; ok {
		return n
	}
	n := c.synth(c.root, kv...)
	c.path[n] = "(" + name + ")"
	c.shared[name] = n
	return n
}

// distributeNot splits a "not" that applyNots cannot honour directly into the union of its
// negations (¬(A ∧ B) = ¬A ∨ ¬B, keyword by keyword).
func (c *schemaCompiler) distributeNot(k conj, at string) *Expr {
	for _, n := range k.nodes {
		x := n.get("not")
		if x == nil || containsNode(k.used, x) || c.negatable(x) || onlyKey(x, "not") {
			continue
		}
		if onlyKey(x, "anyOf") && x.get("anyOf").kind == jArr {
			// ¬(A ∨ B) = ¬A ∧ ¬B
			nodes := append([]*jv{}, k.nodes...)
			for _, a := range x.get("anyOf").arr {
				nodes = append(nodes, c.notNode(a))
			}
			return c.conj(conj{nodes: nodes, used: append(append([]*jv{}, k.used...), x)}, at)
		}
		negs, ok := c.negations(x)
		if !ok {
			continue // applyNots refuses it
		}
		used := append(append([]*jv{}, k.used...), x)
		var alts []*Expr
		for _, ng := range negs {
			if e := c.conj(conj{nodes: append(append([]*jv{}, k.nodes...), ng), used: used}, at); !isNothing(e) {
				alts = append(alts, e)
			}
		}
		if len(alts) == 1 {
			return alts[0]
		}
		return Alt(alts...)
	}
	return nil
}
