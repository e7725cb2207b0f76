// This file is the low-rank adapter transformation (LoRA, Hu et al. 2021) used to fine-tune:
// each matmul by a chosen weight W gains a branch, y = x·Wᵀ + s·((x·Aᵀ)·Bᵀ), with A (r x in)
// and B (out x r) new weights and s = alpha/r, written with the graph's own ops (matmul,
// matmul, scale, add) so that graph.Grad and the executors need nothing new.
package graph

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// LowRank is one adapted weight's branch: the names of its A and B weights, its rank, the
// scale s of its product and the dropout probability of its input (0: none), so that the
// branch is s·((dropout(x)·Aᵀ)·Bᵀ) in training.
type LowRank struct {
	A, B    string
	Rank    int
	Scale   float64
	Dropout float64
}

// WithLowRank returns a copy of g in which every matmul whose weight argument is a key of
// adapters adds its low-rank branch; A and B are new F32 weights of g ([Rank, in], [out,
// Rank]). Every adapted weight must be used by a matmul.
func WithLowRank(g *Graph, adapters map[string]LowRank) (*Graph, error) {
	out := g.Clone()
	names := map[string]bool{}
	for _, v := range out.Inputs {
		names[v.Name] = true
	}
	for _, v := range out.Weights {
		names[v.Name] = true
	}
	for _, n := range out.Nodes {
		for _, o := range n.Outs {
			names[o.Name] = true
		}
	}
	fresh := func(base string) string {
		for i := 0; ; i++ {
			s := fmt.Sprintf("%s.%d", base, i)
			if !names[s] {
				names[s] = true
				return s
			}
		}
	}
	used := map[string]bool{}
	replace := map[*Value]*Value{}
	var nodes []*Node
	for _, n := range out.Nodes {
		for i, a := range n.Args {
			if r, ok := replace[a]; ok {
				n.Args[i] = r
			}
		}
		nodes = append(nodes, n)
		if n.Op != "matmul" || len(n.Args) != 2 || n.Args[1].Kind != KindWeight {
			continue
		}
		w := n.Args[1]
		lr, ok := adapters[w.Name]
		if !ok {
			continue
		}
		if len(w.Type.Shape) != 2 || lr.Rank <= 0 {
			return nil, fmt.Errorf("graph: low-rank adapter of %s %v: rank %d", w, w.Type, lr.Rank)
		}
		if names[lr.A] || names[lr.B] {
			return nil, fmt.Errorf("graph: low-rank adapter of %s: %s or %s already names a value", w, lr.A, lr.B)
		}
		used[w.Name] = true
		names[lr.A], names[lr.B] = true, true
		oc, ic := w.Type.Shape[0].N, w.Type.Shape[1].N
		a := &Value{Name: lr.A, Kind: KindWeight, Type: T(tensor.F32, D(lr.Rank), D(ic))}
		b := &Value{Name: lr.B, Kind: KindWeight, Type: T(tensor.F32, D(oc), D(lr.Rank))}
		out.Weights = append(out.Weights, a, b)
		y := n.Outs[0]
		base := "lora." + w.Name
		x := n.Args[0]
		if lr.Dropout != 0 {
			// Each branch draws its own mask (salt: the branch's rank in the graph), as
			// PEFT's per-module dropout layers do.
			d, err := appendOp(&nodes, fresh(base+".drop"), "dropout", Attrs{"p": Float(lr.Dropout), "salt": Int(int64(len(used)))}, x)
			if err != nil {
				return nil, err
			}
			x = d
		}
		xa, err := appendOp(&nodes, fresh(base+".xa"), "matmul", nil, x, a)
		if err != nil {
			return nil, err
		}
		xab, err := appendOp(&nodes, fresh(base+".xab"), "matmul", nil, xa, b)
		if err != nil {
			return nil, err
		}
		s, err := appendOp(&nodes, fresh(base+".scaled"), "scale", Attrs{"by": Float(lr.Scale)}, xab)
		if err != nil {
			return nil, err
		}
		sum, err := appendOp(&nodes, fresh(base+".out"), "add", nil, y, s)
		if err != nil {
			return nil, err
		}
		replace[y] = sum
	}
	for name := range adapters {
		if !used[name] {
			return nil, fmt.Errorf("graph: low-rank adapter of %s: no matmul uses that weight", name)
		}
	}
	out.Nodes = nodes
	for i, v := range out.Outputs {
		if r, ok := replace[v]; ok {
			out.Outputs[i] = r
		}
	}
	if err := Verify(out); err != nil {
		return nil, err
	}
	return out, nil
}

// appendOp appends op(args) as a node whose result is called name.
func appendOp(nodes *[]*Node, name, op string, attrs Attrs, args ...*Value) (*Value, error) {
	ts, err := Infer(op, argTypes(args), attrs)
	if err != nil {
		return nil, err
	}
	n := &Node{Op: op, Args: args, Attrs: attrs}
	v := &Value{Name: name, Type: ts[0], Kind: KindResult, Def: n}
	n.Outs = []*Value{v}
	*nodes = append(*nodes, n)
	return v, nil
}
