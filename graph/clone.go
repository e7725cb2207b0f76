// This file copies graphs: passes that edit nodes in place work on a Clone, so the graph they
// were given (kept as a stage's Before) stays as it was.
package graph

import "maps"

// Clone returns a deep copy of g: new Values and Nodes, the same names, types and attributes.
func (g *Graph) Clone() *Graph {
	m := map[*Value]*Value{}
	cp := func(v *Value) *Value {
		if v == nil {
			return nil
		}
		if c, ok := m[v]; ok {
			return c
		}
		c := *v
		c.Type.Shape = append(Shape(nil), v.Type.Shape...)
		c.Def = nil
		m[v] = &c
		return &c
	}
	out := &Graph{Name: g.Name}
	for _, v := range g.Inputs {
		out.Inputs = append(out.Inputs, cp(v))
	}
	for _, v := range g.Weights {
		out.Weights = append(out.Weights, cp(v))
	}
	for _, n := range g.Nodes {
		c := &Node{Op: n.Op, Attrs: cloneAttrs(n.Attrs)}
		for _, a := range n.Args {
			c.Args = append(c.Args, cp(a))
		}
		for _, o := range n.Outs {
			co := cp(o)
			co.Def = c
			c.Outs = append(c.Outs, co)
		}
		out.Nodes = append(out.Nodes, c)
	}
	for _, v := range g.Outputs {
		out.Outputs = append(out.Outputs, cp(v))
	}
	return out
}

func cloneAttrs(a Attrs) Attrs {
	if a == nil {
		return nil
	}
	c := maps.Clone(a)
	for k, v := range c {
		if v.Ints != nil {
			v.Ints = append([]int64(nil), v.Ints...)
			c[k] = v
		}
	}
	return c
}
