// This file is the fuse_matmul_multi pass: matmuls of one input by several weights (a block's
// q/k/v projections, its FFN gate and up) become one matmul_multi, so the kernels prepare
// (quantize) the input once for all of them.
package graph

// FuseMatMulMulti merges the weight matmuls that share their input.
var FuseMatMulMulti = Pass{
	Name: "fuse_matmul_multi",
	Doc:  "matmuls sharing one input -> matmul_multi (the input quantized once)",
	Run:  fuseMatMulMulti,
}

func fuseMatMulMulti(in *Graph) (*Graph, Stats, error) {
	g := in.Clone()
	groups := map[*Value][]*Node{}
	for _, n := range g.Nodes {
		if n.Op == "matmul" && n.Args[1].Kind == KindWeight {
			groups[n.Args[0]] = append(groups[n.Args[0]], n)
		}
	}
	st := Stats{}
	nodes := make([]*Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		grp := groups[n.Args0()]
		if n.Op != "matmul" || n.Args[1].Kind != KindWeight || len(grp) < 2 {
			nodes = append(nodes, n)
			continue
		}
		if grp[0] != n {
			continue // emitted with the group's first matmul
		}
		// The later matmuls move up to the first: their arguments (the shared input and
		// weights) are all defined by then.
		m := &Node{Op: "matmul_multi", Args: []*Value{n.Args[0]}}
		for i, mm := range grp {
			m.Args = append(m.Args, mm.Args[1])
			o := mm.Outs[0]
			o.Def, o.Index = m, i
			m.Outs = append(m.Outs, o)
		}
		nodes = append(nodes, m)
		st["fused matmul_multi"]++
		st["matmuls merged"] += int64(len(grp))
	}
	g.Nodes = nodes
	return g, st, nil
}

// Args0 is the node's first argument (nil when it has none).
func (n *Node) Args0() *Value {
	if len(n.Args) == 0 {
		return nil
	}
	return n.Args[0]
}
