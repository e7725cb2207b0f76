// This file is the fuse_swiglu pass: mul(silu(g), u) -> swiglu(g, u), one pass over the rows
// instead of two, when the silu result has no other use.
package graph

// FuseSwiGLU fuses the SiLU gate with its product.
var FuseSwiGLU = Pass{
	Name: "fuse_swiglu",
	Doc:  "mul(silu(g), u) -> swiglu(g, u)",
	Run:  fuseSwiGLU,
}

func fuseSwiGLU(in *Graph) (*Graph, Stats, error) {
	g := in.Clone()
	users := g.Users()
	soleSilu := func(v *Value) bool {
		return v.Kind == KindResult && v.Def.Op == "silu" && len(users[v]) == 1 && !g.IsOutput(v)
	}
	dead := map[*Node]bool{}
	st := Stats{}
	for _, n := range g.Nodes {
		if n.Op != "mul" || n.Args[0] == n.Args[1] {
			continue
		}
		s, u := n.Args[0], n.Args[1]
		if !soleSilu(s) {
			s, u = u, s // mul is commutative: u * silu(g) is the same product
		}
		if !soleSilu(s) || !s.Type.Equal(u.Type) {
			continue
		}
		dead[s.Def] = true
		n.Op, n.Args, n.Attrs = "swiglu", []*Value{s.Def.Args[0], u}, nil
		st["fused swiglu"]++
	}
	g.Nodes = dropNodes(g.Nodes, dead)
	return g, st, nil
}

// dropNodes returns nodes without those in dead.
func dropNodes(nodes []*Node, dead map[*Node]bool) []*Node {
	if len(dead) == 0 {
		return nodes
	}
	out := nodes[:0:0]
	for _, n := range nodes {
		if !dead[n] {
			out = append(out, n)
		}
	}
	return out
}
