// This file finds where the graph spells out a sum that train/nn's hand-written layers
// accumulated (until main be94aba), so that the executor accumulates in the same order and gets
// the same floats:
//
//   - a weight's gradient (one contribution, or the add of several: a tied embedding's) is
//     added by each contribution's node straight into the trainer's G, in execution order;
//   - the input gradient of matmuls sharing an input (q, k, v; gate, up), an add of matmul_dx
//     results, is one chain of Gemms accumulating in the forward's order;
//   - silu(g)·u and its backward (mul, mul, silu_grad) run as the kernels' SwiGLU pair.
package trainexec

import (
	"slices"

	"github.com/llmcloud/llmcloud/graph"
)

// fusion is what the executor runs differently from one instruction per node.
type fusion struct {
	skip    map[*graph.Node]bool
	uses    map[*graph.Value]int
	sink    map[*graph.Value][]float32 // a gradient contribution added straight into this G
	sinkOf  map[*graph.Value]string    // ... of this weight
	noSinkW []string
	noSink  []*graph.Value // gradient outputs computed, then added into G at the end
	noSinkG [][]float32
	dxSum   map[*graph.Node][]*graph.Node   // add node -> its matmul_dx leaves, in the forward's order
	swFwd   map[*graph.Node][2]*graph.Value // mul(silu(g), u) -> g, u
	swBwd   map[*graph.Node]swigluGrad
	index   map[*graph.Node]int
	normAdd map[*graph.Node]normAdd // rms_norm_grad whose dx is added to another gradient
}

// normAdd is the add of a norm's input gradient dx to other, done by accumulating dx into
// other's values as train/nn's residual gradient buffer did.
type normAdd struct {
	add   *graph.Node
	other *graph.Value
}

// swigluGrad is the backward of h = silu(g)·u for dy, writing dg and du.
type swigluGrad struct{ dy, g, u, dg, du *graph.Value }

func newFusion(p *Program, g *graph.Graph, wrt []*graph.Value) *fusion {
	f := &fusion{skip: map[*graph.Node]bool{}, uses: map[*graph.Value]int{}, sink: map[*graph.Value][]float32{}, sinkOf: map[*graph.Value]string{},
		dxSum: map[*graph.Node][]*graph.Node{}, swFwd: map[*graph.Node][2]*graph.Value{},
		swBwd: map[*graph.Node]swigluGrad{}, index: map[*graph.Node]int{}, normAdd: map[*graph.Node]normAdd{}}
	users := map[*graph.Value][]*graph.Node{}
	for i, n := range g.Nodes {
		f.index[n] = i
		for _, a := range n.Args {
			f.uses[a]++
			users[a] = append(users[a], n)
		}
	}
	for _, o := range g.Outputs {
		f.uses[o]++
	}
	// leaves of the add tree at v whose inner sums are used once.
	var leaves func(v *graph.Value, inner *[]*graph.Node) []*graph.Value
	leaves = func(v *graph.Value, inner *[]*graph.Node) []*graph.Value {
		n := v.Def
		if n == nil || n.Op != "add" || n.Args[0] == n.Args[1] || !n.Args[0].Type.Equal(n.Args[1].Type) {
			return []*graph.Value{v}
		}
		var out []*graph.Value
		*inner = append(*inner, n)
		for _, a := range n.Args {
			if a.Def != nil && a.Def.Op == "add" && f.uses[a] == 1 {
				out = append(out, leaves(a, inner)...)
			} else {
				out = append(out, a)
			}
		}
		return out
	}
	// Weight gradients.
	for i, w := range wrt {
		if w.Kind != graph.KindWeight {
			continue // a stage's input: its gradient is an output, not added into a G
		}
		d, G := g.Outputs[i+1], p.params[w.Name].G
		var inner []*graph.Node
		ls := leaves(d, &inner)
		ok := f.uses[d] == 1
		for _, l := range ls {
			ok = ok && l.Def != nil && f.uses[l] == 1 && f.sink[l] == nil && sinkable(l)
		}
		if !ok {
			f.noSink, f.noSinkG, f.noSinkW = append(f.noSink, d), append(f.noSinkG, G), append(f.noSinkW, w.Name)
			continue
		}
		for _, l := range ls {
			f.sink[l], f.sinkOf[l] = G, w.Name
		}
		for _, n := range inner {
			f.skip[n] = true
		}
	}
	// Sums of matmul_dx.
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		if n.Op != "add" || f.skip[n] {
			continue
		}
		var inner []*graph.Node
		ls := leaves(n.Outs[0], &inner)
		ok := len(ls) >= 2
		for _, l := range ls {
			ok = ok && l.Def != nil && l.Def.Op == "matmul_dx" && f.uses[l] == 1
		}
		if !ok {
			continue
		}
		var ns []*graph.Node
		for _, l := range ls {
			ns = append(ns, l.Def)
			f.skip[l.Def] = true
		}
		slices.SortFunc(ns, func(a, b *graph.Node) int { return f.index[b] - f.index[a] })
		for _, m := range inner[1:] {
			f.skip[m] = true
		}
		f.dxSum[n] = ns
	}
	// SwiGLU.
	for _, m := range g.Nodes {
		if m.Op != "mul" || m.Args[0].Def == nil || m.Args[0].Def.Op != "silu" || m.Args[0] == m.Args[1] {
			continue
		}
		s, u := m.Args[0], m.Args[1]
		gv := s.Def.Args[0]
		f.swFwd[m] = [2]*graph.Value{gv, u}
		var bn, an, sg *graph.Node
		for _, b := range users[s] {
			if b.Op == "mul" && b.Args[1] == s && b.Args[0] != s {
				bn = b
			}
		}
		if bn != nil {
			for _, a := range users[u] {
				if a.Op == "mul" && a != m && a.Args[1] == u && a.Args[0] == bn.Args[0] && f.uses[a.Outs[0]] == 1 {
					for _, c := range users[a.Outs[0]] {
						if c.Op == "silu_grad" && c.Args[1] == gv {
							an, sg = a, c
						}
					}
				}
			}
		}
		sUsers := 1
		if an != nil {
			first := min(f.index[an], f.index[bn])
			at := g.Nodes[first]
			f.swBwd[at] = swigluGrad{dy: bn.Args[0], g: gv, u: u, dg: sg.Outs[0], du: bn.Outs[0]}
			for _, x := range []*graph.Node{an, bn, sg} {
				if x != at {
					f.skip[x] = true
				}
			}
			sUsers = 2
		}
		if f.uses[s] == sUsers {
			f.skip[s.Def] = true
		}
	}
	f.findNormAdds(g, users)
	return f
}

// findNormAdds finds rms_norm_grad nodes whose dx is used once, by an add with a gradient
// written before the norm's backward runs.
func (f *fusion) findNormAdds(g *graph.Graph, users map[*graph.Value][]*graph.Node) {
	at := map[*graph.Value]int{} // the node index at which a value is written
	for i, n := range g.Nodes {
		for _, o := range n.Outs {
			if _, ok := at[o]; !ok {
				at[o] = i
			}
		}
		if sw, ok := f.swBwd[n]; ok {
			at[sw.dg], at[sw.du] = i, i
		}
		if n.Op != "rms_norm_grad" || f.skip[n] || f.uses[n.Outs[0]] != 1 {
			continue
		}
		dx := n.Outs[0]
		a := users[dx][0]
		if a.Op != "add" || f.skip[a] || f.dxSum[a] != nil || a.Args[0] == a.Args[1] || !a.Args[0].Type.Equal(a.Args[1].Type) {
			continue
		}
		other := a.Args[0]
		if other == dx {
			other = a.Args[1]
		}
		if w, ok := at[other]; other.Kind == graph.KindWeight || (other.Kind == graph.KindResult && (!ok || w >= i)) {
			continue // an input (a stage's output gradient) is there before any node
		}
		f.normAdd[n] = normAdd{add: a, other: other}
		f.skip[a] = true
		at[a.Outs[0]] = i
	}
}

// sinkable reports whether v's node can add v straight into a gradient buffer.
func sinkable(v *graph.Value) bool {
	switch v.Def.Op {
	case "matmul_dw", "embedding_grad", "embedding_shard_grad", "sum_rows":
		return true
	case "rms_norm_grad":
		return v.Index == 1
	case "moe_grad", "moe_aux_grad": // the gradients of the weights (not x's, the first)
		return v.Index >= 1
	case "all_reduce_sum": // of a replicated weight's partial gradient (graph.ShardTP)
		return v.Def.Args[0].Kind == graph.KindResult
	}
	return false
}
