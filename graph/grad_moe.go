// This file holds the backward of moe (ops_moe.go) and the auxiliary load-balancing loss that
// trains its router, with their ops:
//
//	y = moe(x, router, gate, up, down[, shared...])
//	    (dx, drouter, dgate, dup, ddown[, dshared...]) = moe_grad(dy, x, router, gate, up, down[, shared...])
//	l = moe_aux(x, router)        (dx, drouter) = moe_aux_grad(dl, x, router)
//
// The top-k choice of experts is a constant of the backward (as in PyTorch's MoE layers): the
// gradient flows through the chosen experts' feed-forwards and through their routing weights
// (the scores of the chosen experts, renormalised when norm=1) into the router's logits, and
// no gradient reaches the experts a row did not choose.
//
// moe_aux is Switch Transformer's / Mixtral's load-balancing loss over the rows of one layer:
// E·Σ_e f_e·P_e, f_e the fraction of rows whose top-k holds e (the counts are constants) and
// P_e the mean score (softmax or sigmoid of the logits) of e; times the weight attribute. With
// every row choosing k experts and uniform routing it is k (HF transformers'
// load_balancing_loss_func, which concatenates the layers; the trainer averages the layers'
// losses instead).
package graph

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	register(&OpDef{Name: "moe_grad", MinArgs: 6, MaxArgs: 10,
		Attrs: []AttrSpec{{"experts_used", AttrInt, true}, {"gating", AttrString, false},
			{"norm", AttrInt, false}, {"scale", AttrFloat, false}},
		Doc: "gradient of moe (args dy, then moe's arguments; moe's attributes) -> one f32 gradient per moe argument; " +
			"the top-k choice is constant",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			ts, err := moeType(a[1:], at)
			if err != nil {
				return nil, err
			}
			if err := want(a[0].Equal(ts[0]), "dy %v, want %v", a[0], ts[0]); err != nil {
				return nil, err
			}
			return f32Like(a[1:]), nil
		}})
	register(&OpDef{Name: "moe_aux", MinArgs: 2, MaxArgs: 2,
		Attrs: []AttrSpec{{"experts_used", AttrInt, true}, {"gating", AttrString, false}, {"weight", AttrFloat, false}},
		Doc: "load-balancing loss of a moe router: x f32[n,D], router [E,D] -> f32[]: weight·E·Σ_e f_e·P_e, " +
			"f_e the fraction of rows whose experts_used highest scores hold e, P_e the mean score of e",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			if err := moeAuxArgs(a[0], a[1], at); err != nil {
				return nil, err
			}
			return []Type{T(tensor.F32)}, nil
		}})
	register(&OpDef{Name: "moe_aux_grad", MinArgs: 3, MaxArgs: 3,
		Attrs: []AttrSpec{{"experts_used", AttrInt, true}, {"gating", AttrString, false}, {"weight", AttrFloat, false}},
		Doc:   "gradient of moe_aux (args dl f32[], x, router; moe_aux's attributes) -> (dx, drouter) f32; the counts f_e are constant",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			if err := want(a[0].Equal(T(tensor.F32)), "dl must be f32[], is %v", a[0]); err != nil {
				return nil, err
			}
			if err := moeAuxArgs(a[1], a[2], at); err != nil {
				return nil, err
			}
			return f32Like(a[1:]), nil
		}})
	gradRules["moe"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		if !MoEPlain(n.Attrs) {
			if gb.err == nil {
				gb.err = fmt.Errorf("%s: moe with a selection bias, grouped top-k, expert biases or swiglu_oai has no backward", n.Name())
			}
			return make([]*Value, len(n.Args))
		}
		return gb.op("moe_grad", n.Attrs, append([]*Value{dys[0]}, n.Args...)...)
	}
	gradRules["moe_aux"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return gb.op("moe_aux_grad", n.Attrs, dys[0], n.Args[0], n.Args[1])
	}
}

// moeAuxArgs checks moe_aux's x, router and attributes.
func moeAuxArgs(x, router Type, at Attrs) error {
	if err := want(isFloat(x) && len(x.Shape) == 2 && x.Shape[1].Known(), "x must be f32[n,D], is %v", x); err != nil {
		return err
	}
	if err := want(len(router.Shape) == 2 && router.Shape[0].Known() && router.Shape[0].N > 0 && router.Shape[1] == x.Shape[1] &&
		router.DType != tensor.I32, "router must be numeric [E,%v], is %v", x.Shape[1], router); err != nil {
		return err
	}
	k := at.Int("experts_used", 0)
	if err := want(k >= 1 && k <= int64(router.Shape[0].N), "experts_used = %d, must be in [1, %d] (the experts)", k, router.Shape[0].N); err != nil {
		return err
	}
	switch g := at.Str("gating", MoESoftmax); g {
	case MoESoftmax, MoESigmoid:
	default:
		return fmt.Errorf("gating %q: want %q or %q", g, MoESoftmax, MoESigmoid)
	}
	return nil
}

// f32Like is the F32 types of the shapes of ts (the gradients of values of those types).
func f32Like(ts []Type) []Type {
	out := make([]Type, len(ts))
	for i, t := range ts {
		out[i] = Type{tensor.F32, t.Shape}
	}
	return out
}

// WithMoEAux returns a copy of lg (a graph with its loss, WithLoss's) whose loss adds
// coef/L·Σ_l moe_aux(x_l, router_l) over the L moe nodes (none: lg itself), so that training
// balances the experts' loads. Each moe_aux node carries weight coef/L.
func WithMoEAux(lg *Graph, coef float64) (*Graph, error) {
	var moes []*Node
	for _, n := range lg.Nodes {
		if n.Op == "moe" {
			moes = append(moes, n)
		}
	}
	if len(moes) == 0 || coef == 0 {
		return lg, nil
	}
	cg := lg.Clone()
	loss := cg.Outputs[0]
	gb := newGradBuilder(cg)
	for i, m := range moes {
		m = cg.Nodes[indexOf(lg.Nodes, m)]
		a := Attrs{"experts_used": m.Attrs["experts_used"], "weight": Float(coef / float64(len(moes)))}
		if g, ok := m.Attrs["gating"]; ok {
			a["gating"] = g
		}
		aux := gb.op1("moe_aux", a, m.Args[0], m.Args[1])
		aux.Name = fmt.Sprintf("moe_aux.%d", i)
		loss = gb.op1("add", nil, loss, aux)
	}
	if gb.err != nil {
		return nil, gb.err
	}
	cg.Outputs[0] = loss
	if err := Verify(cg); err != nil {
		return nil, fmt.Errorf("graph: moe aux loss: %w", err)
	}
	return cg, nil
}

func indexOf(ns []*Node, n *Node) int {
	for i, m := range ns {
		if m == n {
			return i
		}
	}
	return -1
}
