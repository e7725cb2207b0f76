// This file registers moe, the mixture-of-experts feed-forward (Mixtral's block_sparse_moe;
// llama.cpp's build_moe_ffn): per row, a router picks experts_used of the experts and the
// row's output is the weighted sum of those experts' SwiGLU feed-forwards.
//
// The routing choices are attributes, so the families that route differently use the same op:
//
//	gating    "softmax" (default; Mixtral, Qwen2-MoE) or "sigmoid" (DeepSeek-V3) scores of the
//	          router logits
//	norm      1: the chosen scores are divided by their sum (Mixtral; DeepSeek-V3);
//	          0: used as they are (Qwen2-MoE)
//	scale     the weights are multiplied by it (DeepSeek's routed_scaling_factor; default 1)
//
// A shared expert (Qwen2-MoE, DeepSeek), which every row runs, follows as three more arguments
// (its gate [Fs,D], up [Fs,D] and down [D,Fs]), optionally with a fourth, the [1,D] row whose
// sigmoid scales the shared expert's output per row (Qwen2-MoE's shared_expert_gate).
//
// DeepSeek-V3's routing adds (ops_moe_route.go):
//
//	bias        1: the last argument is a selection bias f32[E] (e_score_correction_bias),
//	            added to the scores to choose the experts, not to weigh them
//	groups      grouped top-k: the experts in this many equal groups, of which the
//	groups_used best are kept (a group's score: the sum of its group_top best (biased)
//	group_top   scores; group_top 1 is V2's group_limited_greedy, 2 V3's noaux_tc), the
//	            top experts_used chosen among their experts
//
// Expert parallelism (graph.ShardTPServing with TPOptions.ExpertParallel) gives a rank a block
// of the experts: expert_lo is the first expert the stacked gate, up and down hold (their first
// dimension is then the block's, the router's all of them). Every row is still routed over all
// the experts; the op adds only the chosen experts it holds, so its result is this rank's part
// of the sum, which an all-reduce completes.
package graph

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// MoE gating functions (the gating attribute).
const (
	MoESoftmax = "softmax"
	MoESigmoid = "sigmoid"
)

func init() {
	register(&OpDef{Name: "moe", MinArgs: 5, MaxArgs: 14,
		Attrs: []AttrSpec{{"experts_used", AttrInt, true}, {"gating", AttrString, false},
			{"norm", AttrInt, false}, {"scale", AttrFloat, false}, {"bias", AttrInt, false},
			{"groups", AttrInt, false}, {"groups_used", AttrInt, false}, {"group_top", AttrInt, false},
			{"expert_bias", AttrInt, false}, {"act", AttrString, false}, {"alpha", AttrFloat, false}, {"limit", AttrFloat, false},
			{"expert_lo", AttrInt, false}},
		Doc: "mixture of experts: x f32[n,D], router [E,D], gate [E,F,D], up [E,F,D], down [E,D,F] (any weight dtypes) -> " +
			"f32[n,D]: per row, scores = gating(x·routerᵀ) (softmax or sigmoid), the experts_used highest (ties: lower index), " +
			"their scores (divided by their sum if norm=1, times scale) weighting down_e(silu(gate_e x) * up_e x); " +
			"then, with shared gate [Fs,D], up [Fs,D], down [D,Fs] (and gate_inp [1,D]), plus (sigmoid(x·gate_inpᵀ) times) the shared expert's output; " +
			"bias=1: a last argument f32[E] added to the scores for choosing; groups, groups_used, group_top: grouped top-k; " +
			"expert_bias=1 (gpt-oss): four arguments before it, biases of the router f32[E], gate and up f32[E,F], down f32[E,D]; " +
			"act swiglu_oai: the experts' activation is swiglu_oai(gate, up) (alpha, limit); " +
			"expert_lo: gate, up and down hold experts [expert_lo, expert_lo+El) of the router's E, the result only their part of the sum",
		Infer: moeType})
}

func moeType(a []Type, at Attrs) ([]Type, error) {
	x, router, gate, up, down := a[0], a[1], a[2], a[3], a[4]
	if err := want(isFloat(x) && len(x.Shape) == 2 && x.Shape[1].Known(), "x must be f32[n,D], is %v", x); err != nil {
		return nil, err
	}
	if err := want(len(router.Shape) == 2 && router.Shape[0].Known() && router.Shape[1] == x.Shape[1],
		"router must be [E,%v], is %v", x.Shape[1], router); err != nil {
		return nil, err
	}
	e, d := router.Shape[0], x.Shape[1]
	if err := want(e.N > 0, "router of %v experts", e); err != nil {
		return nil, err
	}
	if err := moeRouteAttrs(a, at, e.N); err != nil {
		return nil, err
	}
	a = a[:len(a)-MoETail(at)]
	held := e // the experts gate, up and down hold
	if lo, ok := at["expert_lo"]; ok {
		if err := want(len(gate.Shape) == 3 && gate.Shape[0].Known() && gate.Shape[0].N > 0 && lo.I >= 0 && lo.I+int64(gate.Shape[0].N) <= int64(e.N),
			"expert_lo = %d with gate %v: the experts held must be a block of the router's %v", lo.I, gate, e); err != nil {
			return nil, err
		}
		if err := want(!MoEExpertBiases(at), "expert_lo with expert_bias: the experts' biases are not split"); err != nil {
			return nil, err
		}
		held = gate.Shape[0]
	}
	if err := want(len(gate.Shape) == 3 && gate.Shape[0] == held && gate.Shape[1].Known() && gate.Shape[1].N > 0 && gate.Shape[2] == d,
		"gate must be [%v,F,%v], is %v", held, d, gate); err != nil {
		return nil, err
	}
	f := gate.Shape[1]
	if err := want(up.Shape.Equal(gate.Shape), "up must be %v like gate, is %v", gate.Shape, up); err != nil {
		return nil, err
	}
	if err := want(down.Shape.Equal(Shape{held, d, f}), "down must be [%v,%v,%v], is %v", held, d, f, down); err != nil {
		return nil, err
	}
	switch len(a) {
	case 5:
	case 8, 9:
		sg, su, sd := a[5], a[6], a[7]
		if err := want(len(sg.Shape) == 2 && sg.Shape[0].Known() && sg.Shape[0].N > 0 && sg.Shape[1] == d,
			"shared gate must be [Fs,%v], is %v", d, sg); err != nil {
			return nil, err
		}
		fs := sg.Shape[0]
		if err := want(su.Shape.Equal(sg.Shape) && sd.Shape.Equal(Shape{d, fs}),
			"shared up must be %v and shared down [%v,%v], are %v and %v", sg.Shape, d, fs, su, sd); err != nil {
			return nil, err
		}
		if len(a) == 9 {
			if err := want(a[8].Shape.Equal(Shape{D(1), d}), "shared gate_inp must be [1,%v], is %v", d, a[8]); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("%d arguments: want 5 (routed experts), 8 (and a shared expert) or 9 (and its gate)", len(a))
	}
	for _, w := range a[1:] {
		if err := want(w.DType != tensor.I32, "weights must be numeric, %v is i32", w); err != nil {
			return nil, err
		}
	}
	k := at.Int("experts_used", 0)
	if err := want(k >= 1 && k <= int64(e.N), "experts_used = %d, must be in [1, %d] (the experts)", k, e.N); err != nil {
		return nil, err
	}
	switch g := at.Str("gating", MoESoftmax); g {
	case MoESoftmax, MoESigmoid:
	default:
		return nil, fmt.Errorf("gating %q: want %q or %q", g, MoESoftmax, MoESigmoid)
	}
	if n := at.Int("norm", 0); n != 0 && n != 1 {
		return nil, fmt.Errorf("norm = %d: want 0 or 1", n)
	}
	return []Type{x}, nil
}

// moeCost: the router over every row, then per row experts_used SwiGLU feed-forwards (6·F·D
// FLOPs each); the bytes are x and the result, the router, and the weights of the experts a
// step can reach (min(E, rows·experts_used) of them, each read once: the kernel groups the
// rows by expert).
func moeCost(n *Node, env CostEnv) (Cost, error) {
	x, router, gate := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
	rows, ok := x.Shape[:1].Elems(env.Sym)
	if !ok {
		return Cost{}, fmt.Errorf("the rows of %s %v are not bound", n.Args[0], x)
	}
	e, f, d := int64(gate.Shape[0].N), int64(gate.Shape[1].N), int64(gate.Shape[2].N)
	all := int64(router.Shape[0].N) // e of them held (expert_lo: a block)
	k := n.Attrs.Int("experts_used", 1)
	reach := min(e, int64(rows)*k)
	var b int64
	for _, t := range []Type{x, x, router} {
		v, ok := t.Bytes(env.Sym)
		if !ok {
			return Cost{}, fmt.Errorf("the size of %v is not bound", t)
		}
		b += v
	}
	for _, w := range n.Args[2:5] {
		v, ok := w.Type.Bytes(nil)
		if !ok {
			return Cost{}, fmt.Errorf("the size of %s %v", w, w.Type)
		}
		b += v / e * reach
	}
	r := int64(rows)
	f64 := 2*r*all*d + 5*r*all + r*k*e/all*(6*f*d+6*f+2*d) // the held experts' share of the rows' choices
	if len(n.Args)-MoETail(n.Attrs) >= 8 {                 // the shared expert (and its gate) over every row
		fs := int64(n.Args[5].Type.Shape[0].N)
		for _, w := range n.Args[5:] {
			v, ok := w.Type.Bytes(nil)
			if !ok {
				return Cost{}, fmt.Errorf("the size of %s %v", w, w.Type)
			}
			b += v
		}
		f64 += r * (6*fs*d + 6*fs + 4*d)
	}
	return Cost{FLOPs: f64, Bytes: b}, nil
}
