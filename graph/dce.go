// This file is dead-code elimination: the pass that drops every node none of whose results
// reaches a graph output, and every weight no remaining node reads.
//
// Inputs are kept even when nothing reads them: they are the graph's calling convention (the
// caller feeds tokens, pos and logit_rows by position), so removing one would change how the
// graph is called. Ops with a side effect beyond their result are roots like the outputs: the
// attention op writes its layer's k and v into the paged KV cache in serving, which later
// steps read, so it is never dropped (nor what it reads).
package graph

// sideEffectOps are ops kept even when their results are unused.
var sideEffectOps = map[string]bool{"attention": true}

// DCE is the dead-code elimination pass.
var DCE = Pass{
	Name: "dce",
	Doc:  "drop nodes whose results reach no output (attention, which writes the KV cache, is kept) and weights nothing reads; inputs stay (the calling convention)",
	Run:  runDCE,
}

func runDCE(g *Graph) (*Graph, Stats, error) {
	live := map[*Value]bool{}
	for _, o := range g.Outputs {
		live[o] = true
	}
	keep := make([]bool, len(g.Nodes))
	// Walk backwards: a node is kept when one of its results is live or it has a side effect,
	// and then its arguments are live. Arguments come from earlier nodes, so one pass suffices.
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		k := sideEffectOps[n.Op]
		for _, o := range n.Outs {
			k = k || live[o]
		}
		if !k {
			continue
		}
		keep[i] = true
		for _, a := range n.Args {
			live[a] = true
		}
	}
	out := &Graph{Name: g.Name, Inputs: g.Inputs, Outputs: g.Outputs}
	st := Stats{"removed nodes": 0, "removed weights": 0}
	for i, n := range g.Nodes {
		if keep[i] {
			out.Nodes = append(out.Nodes, n)
		} else {
			st["removed nodes"]++
		}
	}
	for _, w := range g.Weights {
		if live[w] {
			out.Weights = append(out.Weights, w)
		} else {
			st["removed weights"]++
		}
	}
	return out, st, nil
}
