// This file is the residual add + norm fusion: s = add(x, y) followed by h = rms_norm(s, w)
// becomes one add_rms_norm(x, y, w) giving (s, h), so the sum is written once and normed while
// its row is still in cache.
//
// It applies when x and y have the same type (not a bias broadcast over rows), w normalizes
// whole rows (len(w) equals the last dimension of s), and s is used by the norm and elsewhere
// too (an output or another node: the residual stream, as in every Llama block). The fused
// node stands where the add stood (w must be defined before it, as a weight always is); the
// sum and the normed result keep their names, so nothing downstream changes.
package graph

// FuseAddNorm is the add + rms_norm fusion pass.
var FuseAddNorm = Pass{
	Name: "fuse_add_rms_norm",
	Doc:  "s = add(x, y); h = rms_norm(s, w) -> (s, h) = add_rms_norm(x, y, w) when s is also used elsewhere (the residual)",
	Run:  runFuseAddNorm,
}

func runFuseAddNorm(in *Graph) (*Graph, Stats, error) {
	g := in.Clone()
	users := g.Users()
	index := map[*Node]int{}
	for i, n := range g.Nodes {
		index[n] = i
	}
	// defAt is the index of the node defining v (-1 for inputs and weights).
	defAt := func(v *Value) int {
		if v.Def == nil {
			return -1
		}
		return index[v.Def]
	}
	removed := map[*Node]bool{}
	fused := int64(0)
	for i, add := range g.Nodes {
		if add.Op != "add" || len(add.Args) != 2 || !add.Args[0].Type.Equal(add.Args[1].Type) {
			continue
		}
		s := add.Outs[0]
		norm, others := (*Node)(nil), 0
		for _, u := range users[s] {
			if norm == nil && u.Op == "rms_norm" && u.Args[0] == s && u.Args[1] != s && !removed[u] &&
				len(u.Args[1].Type.Shape) == 1 && u.Args[1].Type.Shape[0] == s.Type.Shape.Last() &&
				defAt(u.Args[1]) < i {
				norm = u
				continue
			}
			others++
		}
		if norm == nil || (others == 0 && !g.IsOutput(s)) {
			continue
		}
		h := norm.Outs[0]
		f := &Node{Op: "add_rms_norm", Args: []*Value{add.Args[0], add.Args[1], norm.Args[1]},
			Attrs: Attrs{"eps": norm.Attrs["eps"]}, Outs: []*Value{s, h}}
		s.Def, s.Index = f, 0
		h.Def, h.Index = f, 1
		g.Nodes[i] = f
		removed[norm] = true
		fused++
	}
	if fused > 0 {
		nodes := g.Nodes[:0]
		for _, n := range g.Nodes {
			if !removed[n] {
				nodes = append(nodes, n)
			}
		}
		g.Nodes = nodes
	}
	return g, Stats{"fused add+rms_norm": fused}, nil
}
