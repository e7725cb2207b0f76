// This file decides when oneOf may be compiled as anyOf: when no instance can match two
// branches (different types, disjoint enums, a required property with disjoint constant
// values, or a property one branch requires and the other forbids).

package grammar

// disjoint: context is the rest of the conjunction the oneOf sits in.
func (c *schemaCompiler) disjoint(branches []*jv, context []*jv) bool {
	infos := make([]*msch, len(branches))
	for i, b := range branches {
		k, ok := c.flatten(conj{nodes: append(append([]*jv{}, context...), b)})
		if !ok {
			continue // false: matches nothing
		}
		m := c.merge(k)
		m.types &= c.unionTypes(k.nodes, 0)
		if m.hasEnum {
			t := 0
			for _, v := range m.enum {
				t |= kindBits(v)
			}
			m.types &= t
		}
		infos[i] = m
	}
	for i := range infos {
		for j := i + 1; j < len(infos); j++ {
			if infos[i] != nil && infos[j] != nil && !c.pairDisjoint(infos[i], infos[j]) {
				return false
			}
		}
	}
	return true
}

func kindBits(v *jv) int {
	switch v.kind {
	case jNull:
		return tNull
	case jBool:
		return tBool
	case jNum:
		if r := v.rat(); r != nil && r.IsInt() {
			return tInt
		}
		return tNum
	case jStr:
		return tStr
	case jArr:
		return tArr
	}
	return tObj
}

func (c *schemaCompiler) pairDisjoint(a, b *msch) bool {
	if a.types&b.types == 0 {
		return true
	}
	if a.hasEnum && b.hasEnum && !enumsMeet(a.enum, b.enum) {
		return true
	}
	if a.hasEnum && c.noneValid(a.enum, b) || b.hasEnum && c.noneValid(b.enum, a) {
		return true
	}
	if a.types&^tObj != 0 || b.types&^tObj != 0 {
		return false
	}
	// Both objects only.
	for _, p := range requiredOf(a) {
		if c.forbids(b, p) {
			return true
		}
		if !containsStr(requiredOf(b), p) {
			continue
		}
		ea, oka := c.propEnum(a, p)
		eb, okb := c.propEnum(b, p)
		if oka && okb && !enumsMeet(ea, eb) {
			return true
		}
	}
	for _, p := range requiredOf(b) {
		if c.forbids(a, p) {
			return true
		}
	}
	return false
}

func enumsMeet(a, b []*jv) bool {
	for _, x := range a {
		for _, y := range b {
			if equalJV(x, y) {
				return true
			}
		}
	}
	return false
}

func requiredOf(m *msch) []string {
	var out []string
	for _, n := range m.objs {
		if r := n.get("required"); r != nil && r.kind == jArr {
			for _, s := range r.arr {
				if s.kind == jStr {
					out = append(out, s.s)
				}
			}
		}
	}
	return out
}

// forbids: some conjunct has additionalProperties false, no patterns, and does not name p.
func (c *schemaCompiler) forbids(m *msch, p string) bool {
	for _, n := range m.objs {
		a := n.get("additionalProperties")
		if a == nil || a.kind != jBool || a.b || n.get("patternProperties") != nil {
			continue
		}
		if props := n.get("properties"); props == nil || props.get(p) == nil {
			return true
		}
	}
	return false
}

// propEnum: the values property p may take (from enum/const in its schemas), if limited.
func (c *schemaCompiler) propEnum(m *msch, p string) ([]*jv, bool) {
	var nodes []*jv
	for _, n := range m.objs {
		if props := n.get("properties"); props != nil && props.get(p) != nil {
			nodes = append(nodes, props.get(p))
		}
	}
	if len(nodes) == 0 {
		return nil, false
	}
	k, ok := c.flatten(conj{nodes: nodes})
	if !ok {
		return nil, true
	}
	pm := c.merge(k)
	return pm.enum, pm.hasEnum
}

// noneValid: no scalar value of vals satisfies m (false if any is not a scalar).
func (c *schemaCompiler) noneValid(vals []*jv, m *msch) bool {
	if len(m.arrs) > 0 || len(m.objs) > 0 || len(m.nots) > 0 || len(m.formats) > 0 {
		return false
	}
	for _, v := range vals {
		if v.kind == jArr || v.kind == jObj || c.valueOK(v, m) {
			return false
		}
	}
	return true
}

// unionTypes bounds the types a conjunction's anyOf/oneOf branches allow.
func (c *schemaCompiler) unionTypes(nodes []*jv, depth int) int {
	t := tAll
	if depth > 8 {
		return t
	}
	for _, n := range nodes {
		for _, kw := range []string{"anyOf", "oneOf"} {
			a := n.get(kw)
			if a == nil || a.kind != jArr {
				continue
			}
			u := 0
			for _, b := range a.arr {
				k, ok := c.flatten(conj{nodes: []*jv{b}})
				if !ok {
					continue
				}
				bm := c.merge(k)
				bt := bm.types & c.unionTypes(k.nodes, depth+1)
				if bm.hasEnum {
					et := 0
					for _, v := range bm.enum {
						et |= kindBits(v)
					}
					bt &= et
				}
				u |= bt
			}
			t &= u
		}
	}
	return t
}
