// This file is activation recomputation (checkpointing, Chen et al. 2016) as a rewrite of a
// differentiated graph: the forward is cut into segments at checkpoint values (a layered
// network's residual stream between blocks); the backward's reads of a segment's other values
// go to copies of the segment's nodes, placed right before the first backward node that needs
// them and computed again from the checkpoints. The originals are then last read inside the
// forward, so a liveness-based memory plan frees them there; each segment's copies live only
// through its part of the backward.
package graph

import (
	"fmt"
	"slices"
)

// Recompute rewrites g, a forward (its first forward nodes) followed by its backward (Grad's
// result, possibly further transformed), so that the backward reads no forward value other
// than the checkpoints (named values of the forward: inputs or results), values before the
// first checkpoint or after the last (e.g. a loss head), inputs and weights. Recomputed values
// are named after their original with the suffix ".rc". The first forward nodes of the result
// are g's. g is not modified.
func Recompute(g *Graph, forward int, checkpoints []string) (*Graph, Stats, error) {
	if forward < 0 || forward > len(g.Nodes) {
		return nil, nil, fmt.Errorf("graph: recompute: %d forward nodes of %d", forward, len(g.Nodes))
	}
	cg := g.Clone()
	index := map[*Node]int{}
	for i, n := range cg.Nodes {
		index[n] = i
	}
	var cuts []int // node index defining each checkpoint (-1: an input)
	for _, name := range checkpoints {
		v := cg.Value(name)
		switch {
		case v == nil || v.Kind == KindWeight:
			return nil, nil, fmt.Errorf("graph: recompute: no checkpoint %%%s", name)
		case v.Kind == KindInput:
			cuts = append(cuts, -1)
		case index[v.Def] >= forward:
			return nil, nil, fmt.Errorf("graph: recompute: checkpoint %%%s is not a forward value", name)
		default:
			cuts = append(cuts, index[v.Def])
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	names := map[string]bool{}
	for _, v := range append(append([]*Value{}, cg.Inputs...), cg.Weights...) {
		names[v.Name] = true
	}
	for _, n := range cg.Nodes {
		for _, o := range n.Outs {
			names[o.Name] = true
		}
	}
	insert := map[int][]*Node{} // backward node index -> copies to run before it
	st := Stats{"segments": 0, "recomputed nodes": 0}
	for k := len(cuts) - 2; k >= 0; k-- {
		lo, hi := cuts[k]+1, cuts[k+1] // the segment's nodes [lo, hi]; hi's results are checkpoints
		inner := map[*Value]bool{}
		for _, n := range cg.Nodes[lo:hi] {
			for _, o := range n.Outs {
				inner[o] = true
			}
		}
		need := map[*Value]bool{}
		at := -1
		for i := forward; i < len(cg.Nodes); i++ {
			for _, a := range cg.Nodes[i].Args {
				if inner[a] {
					need[a] = true
					if at < 0 {
						at = i
					}
				}
			}
		}
		if at < 0 {
			continue
		}
		mark := make([]bool, hi-lo)
		for i := hi - 1; i >= lo; i-- {
			n := cg.Nodes[i]
			for _, o := range n.Outs {
				mark[i-lo] = mark[i-lo] || need[o]
			}
			if mark[i-lo] {
				for _, a := range n.Args {
					if inner[a] {
						need[a] = true
					}
				}
			}
		}
		copyOf := map[*Value]*Value{}
		var copies []*Node
		for i := lo; i < hi; i++ {
			if !mark[i-lo] {
				continue
			}
			n := cg.Nodes[i]
			c := &Node{Op: n.Op, Attrs: cloneAttrs(n.Attrs)}
			for _, a := range n.Args {
				if r := copyOf[a]; r != nil {
					a = r
				}
				c.Args = append(c.Args, a)
			}
			for _, o := range n.Outs {
				name := o.Name + ".rc"
				for names[name] {
					name += "_"
				}
				names[name] = true
				r := &Value{Name: name, Type: o.Type, Kind: KindResult, Def: c, Index: o.Index}
				r.Type.Shape = append(Shape(nil), o.Type.Shape...)
				copyOf[o] = r
				c.Outs = append(c.Outs, r)
			}
			copies = append(copies, c)
		}
		for _, n := range cg.Nodes[forward:] {
			for j, a := range n.Args {
				if r := copyOf[a]; r != nil {
					n.Args[j] = r
				}
			}
		}
		for j, o := range cg.Outputs {
			if r := copyOf[o]; r != nil {
				cg.Outputs[j] = r
			}
		}
		insert[at] = append(insert[at], copies...)
		st["segments"]++
		st["recomputed nodes"] += int64(len(copies))
	}
	nodes := make([]*Node, 0, len(cg.Nodes)+int(st["recomputed nodes"]))
	for i, n := range cg.Nodes {
		nodes = append(nodes, insert[i]...)
		nodes = append(nodes, n)
	}
	cg.Nodes = nodes
	if err := Verify(cg); err != nil {
		return nil, nil, fmt.Errorf("graph: recompute: %w", err)
	}
	return cg, st, nil
}
