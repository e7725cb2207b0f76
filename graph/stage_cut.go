// This file is the pipeline-stage cut: the part of a graph between two of its values. A stage
// of a layered network reads the value entering its first layer as a graph input (the
// previous stage's output) instead of computing it, and its output is the value leaving its
// last layer; everything not between the two (earlier layers, the embedding, later layers,
// the head) is dropped, with the inputs and weights only they read.
package graph

import "fmt"

// Cut returns the part of g from in to out: the result called in becomes an input of its type
// and name (in "": no cut at the start), and the value called out becomes the only output
// (out "": g's outputs). Nodes that reach no output, whatever their op (a stage's attention
// writes no cache), and the inputs and weights no remaining node reads are dropped; in stays
// as the first input. g is not modified.
func Cut(g *Graph, in, out string) (*Graph, error) {
	cg := g.Clone()
	var cut *Value
	if in != "" {
		v := cg.Value(in)
		if v == nil || v.Kind != KindResult {
			return nil, fmt.Errorf("graph: cut: no result %%%s to start from", in)
		}
		cut = &Value{Name: v.Name, Type: v.Type, Kind: KindInput}
		for _, n := range cg.Nodes {
			for i, a := range n.Args {
				if a == v {
					n.Args[i] = cut
				}
			}
		}
		for i, o := range cg.Outputs {
			if o == v {
				cg.Outputs[i] = cut
			}
		}
	}
	if out != "" {
		v := cg.Value(out)
		if v == nil {
			return nil, fmt.Errorf("graph: cut: no value %%%s to end at", out)
		}
		if cut != nil && v.Name == cut.Name {
			v = cut
		}
		cg.Outputs = []*Value{v}
	}
	live := map[*Value]bool{}
	for _, o := range cg.Outputs {
		live[o] = true
	}
	keep := make([]bool, len(cg.Nodes))
	for i := len(cg.Nodes) - 1; i >= 0; i-- {
		n := cg.Nodes[i]
		for _, o := range n.Outs {
			keep[i] = keep[i] || live[o]
		}
		if keep[i] {
			for _, a := range n.Args {
				live[a] = true
			}
		}
	}
	res := &Graph{Name: cg.Name, Outputs: cg.Outputs}
	if cut != nil {
		res.Inputs = append(res.Inputs, cut)
	}
	for _, v := range cg.Inputs {
		if live[v] {
			res.Inputs = append(res.Inputs, v)
		}
	}
	for _, v := range cg.Weights {
		if live[v] {
			res.Weights = append(res.Weights, v)
		}
	}
	for i, n := range cg.Nodes {
		if keep[i] {
			res.Nodes = append(res.Nodes, n)
		}
	}
	if err := Verify(res); err != nil {
		return nil, fmt.Errorf("graph: cut %s..%s: %w", in, out, err)
	}
	return res, nil
}
