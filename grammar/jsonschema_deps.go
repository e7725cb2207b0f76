// This file compiles dependencies/dependentRequired/dependentSchemas: an object either lacks
// the property or has it and what depends on it.

package grammar

import "strings"

// distributeDeps splits on the first dependency not yet used: either the object lacks the
// property, or it has it and what depends on it (property lists or a schema).
func (c *schemaCompiler) distributeDeps(k conj, at string) *Expr {
	for _, n := range k.nodes {
		for _, kw := range []string{"dependencies", "dependentRequired", "dependentSchemas"} {
			d := n.get(kw)
			if d == nil {
				continue
			}
			if d.kind != jObj {
				fail("keyword %q at %s must be an object", kw, c.path[n])
			}
			if len(d.keys) > 6 {
				unsupported(kw, c.path[n]+" (too many entries)")
			}
			for i, name := range d.keys {
				v := d.vals[i]
				if containsNode(k.used, v) {
					continue
				}
				used := append(append([]*jv{}, k.used...), v)
				has := c.requiredNode([]string{name})
				without := append(append([]*jv{}, k.nodes...), c.notNode(has))
				with := append(append([]*jv{}, k.nodes...), has)
				if v.kind == jArr {
					var names []string
					for _, s := range v.arr {
						if s.kind != jStr {
							fail("keyword %q at %s must list strings", kw, c.path[n])
						}
						names = append(names, s.s)
					}
					with = append(with, c.requiredNode(names))
				} else {
					with = append(with, v)
				}
				var alts []*Expr
				for _, nodes := range [][]*jv{without, with} {
					if e := c.conj(conj{nodes: nodes, used: used}, at); !isNothing(e) {
						alts = append(alts, e)
					}
				}
				if len(alts) == 1 {
					return alts[0]
				}
				return Alt(alts...)
			}
		}
	}
	return nil
}

// requiredNode is a schema node {"required": names} (made once per list).
func (c *schemaCompiler) requiredNode(names []string) *jv {
	key := strings.Join(names, "\x00")
	if n, ok := c.reqs[key]; ok {
		return n
	}
	list := &jv{kind: jArr}
	for _, s := range names {
		list.arr = append(list.arr, &jv{kind: jStr, s: s})
	}
	n := &jv{kind: jObj, keys: []string{"required"}, vals: []*jv{list}}
	c.reqs[key] = n
	c.index[n] = len(c.index)
	c.path[n] = "(required " + key + ")"
	return n
}
