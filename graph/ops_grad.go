// This file registers the backward ops: the ops the reverse-mode pass (grad.go) writes to
// compute gradients, each with its type rule and documented semantics (graph/ref implements
// them). They are appended to the registry of ops.go, which stays as it is.
//
// Gradients are always F32: the gradient of a weight of any dtype (F16, Q8_0, ...) is an F32
// tensor of the weight's shape (training keeps F32 weights; a quantized weight's "gradient" is
// the one of its dequantized values). Sequences in attention_grad are laid out as in attention:
// the rows of one sequence are consecutive, and the executor knows where each starts (graph/ref:
// a row whose pos is 0).
package graph

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	register(&OpDef{Name: "matmul_dx", MinArgs: 2, MaxArgs: 2,
		Doc: "gradient of matmul's x: dy f32[..,N] times w[N,K] (any weight dtype, not transposed) -> f32[..,K]",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			dy, w := a[0], a[1]
			if err := want(isFloat(dy) && len(dy.Shape) >= 1 && len(w.Shape) == 2 && dy.Shape.Last() == w.Shape[0],
				"dy %v and weight %v: want f32[..,N] and [N,K]", dy, w); err != nil {
				return nil, err
			}
			return []Type{{tensor.F32, withLast(rowsOf(dy), w.Shape[1])}}, nil
		}})
	register(&OpDef{Name: "matmul_dw", MinArgs: 2, MaxArgs: 2,
		Doc: "gradient of matmul's weight: dyᵀ·x summed over rows, dy f32[..,N], x f32[..,K] -> f32[N,K]",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			dy, x := a[0], a[1]
			if err := want(isFloat(dy) && isFloat(x) && len(dy.Shape) >= 1 && rowsOf(dy).Equal(rowsOf(x)),
				"dy %v and x %v: want f32 with the same rows", dy, x); err != nil {
				return nil, err
			}
			return []Type{{tensor.F32, Shape{dy.Shape.Last(), x.Shape.Last()}}}, nil
		}})
	register(&OpDef{Name: "embedding_grad", MinArgs: 3, MaxArgs: 3,
		Doc: "gradient of embedding's table: rows of dy f32[..,D] added into a zero f32[V,D] at ids i32[..]; table[V,D] gives the shape only",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			dy, ids, tab := a[0], a[1], a[2]
			if err := want(len(tab.Shape) == 2 && ids.DType == tensor.I32 && isFloat(dy) &&
				dy.Shape.Equal(withLast(ids.Shape, tab.Shape[1])), "dy %v, ids %v, table %v: want f32[..,D], i32[..], [V,D]", dy, ids, tab); err != nil {
				return nil, err
			}
			return []Type{{tensor.F32, tab.Shape}}, nil
		}})
	register(&OpDef{Name: "rms_norm_grad", MinArgs: 3, MaxArgs: 3,
		Attrs: []AttrSpec{{"eps", AttrFloat, true}},
		Doc:   "gradient of rms_norm(x, w) for dy: -> (dx f32 like x, dw f32[G] summed over rows and groups)",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(a[0].Equal(a[1]), "dy %v and x %v differ", a[0], a[1]); err != nil {
				return nil, err
			}
			if err := normArgs(a[1], a[2]); err != nil {
				return nil, err
			}
			return []Type{a[1], a[2]}, nil
		}})
	for _, name := range []string{"silu_grad", "softmax_grad"} {
		doc := "gradient of silu: dy * silu'(x), args (dy, x)"
		if name == "softmax_grad" {
			doc = "gradient of softmax from its result y: y * (dy - sum(dy*y)) over the last dimension, args (dy, y)"
		}
		register(&OpDef{Name: name, MinArgs: 2, MaxArgs: 2, Doc: doc, Infer: sameTypes})
	}
	register(&OpDef{Name: "softcap_grad", MinArgs: 2, MaxArgs: 2, Attrs: []AttrSpec{{"cap", AttrFloat, true}},
		Doc: "gradient of softcap: dy * (1 - tanh²(x/cap)), args (dy, x)", Infer: sameTypes})
	register(&OpDef{Name: "rope_grad", MinArgs: 2, MaxArgs: 3,
		Attrs: []AttrSpec{{"heads", AttrInt, true}, {"head_dim", AttrInt, true}, {"theta", AttrFloat, true},
			{"neox", AttrInt, false}, {"mscale", AttrFloat, false}, {"freq_scale", AttrFloat, false}},
		Doc:   "gradient of rope (args dy, pos[, freqs], rope's attributes): dy rotated by the negative angles (the rotation's transpose, cos and sin times mscale)",
		Infer: ropeType})
	register(&OpDef{Name: "attention_grad", MinArgs: 4, MaxArgs: 4,
		Attrs: []AttrSpec{{"layer", AttrInt, true}, {"heads", AttrInt, true}, {"kv_heads", AttrInt, true},
			{"head_dim", AttrInt, true}, {"window", AttrInt, false}, {"softcap", AttrFloat, false},
			{"scale", AttrFloat, false}},
		Doc: "gradient of training attention (args dy, q, k, v; attention's attributes and sequence layout) -> (dq, dk, dv); " +
			"the probabilities are recomputed from q and k",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			ts, err := attentionType(a[1:], at)
			if err != nil {
				return nil, err
			}
			if err := want(a[0].Equal(ts[0]), "dy %v, want %v", a[0], ts[0]); err != nil {
				return nil, err
			}
			return []Type{a[1], a[2], a[3]}, nil
		}})
	register(&OpDef{Name: "gather_rows_grad", MinArgs: 3, MaxArgs: 3,
		Doc: "gradient of gather_rows: rows of dy f32[s,D] added into a zero f32[n,D] at idx i32[s]; x f32[n,D] gives the shape only",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			dy, idx, x := a[0], a[1], a[2]
			if err := want(isFloat(x) && len(x.Shape) == 2 && idx.DType == tensor.I32 && len(idx.Shape) == 1 &&
				dy.Equal(Type{tensor.F32, Shape{idx.Shape[0], x.Shape[1]}}), "dy %v, idx %v, x %v: want f32[s,D], i32[s], f32[n,D]", dy, idx, x); err != nil {
				return nil, err
			}
			return []Type{x}, nil
		}})
	register(&OpDef{Name: "cross_entropy_grad", MinArgs: 3, MaxArgs: 3,
		Doc: "gradient of cross_entropy's logits: dloss f32[] * (softmax(logits) - onehot(target)) / (rows with target >= 0); ignored rows 0",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(a[0].Equal(T(tensor.F32)), "dloss must be f32[], is %v", a[0]); err != nil {
				return nil, err
			}
			if _, err := ops["cross_entropy"].Infer(a[1:], nil); err != nil {
				return nil, err
			}
			return []Type{a[1]}, nil
		}})
	register(&OpDef{Name: "sum_rows", MinArgs: 1, MaxArgs: 1, Attrs: []AttrSpec{{"keep", AttrInt, true}},
		Doc: "x f32 summed over all but its last `keep` dimensions (keep = 0: the sum of all, f32[]); the gradient of a broadcast",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			k := at.Int("keep", -1)
			if err := want(isFloat(a[0]) && k >= 0 && int(k) <= len(a[0].Shape), "x %v, keep %d: want f32 with at least keep dimensions", a[0], k); err != nil {
				return nil, err
			}
			return []Type{{tensor.F32, append(Shape{}, a[0].Shape[len(a[0].Shape)-int(k):]...)}}, nil
		}})
	register(&OpDef{Name: "constant", MinArgs: 0, MaxArgs: 0, Attrs: []AttrSpec{{"value", AttrFloat, true}},
		Doc:   "the scalar f32[] value (the seed d loss/d loss = 1 of the backward pass)",
		Infer: func([]Type, Attrs) ([]Type, error) { return []Type{T(tensor.F32)}, nil }})
	register(&OpDef{Name: "zeros", MinArgs: 1, MaxArgs: 1,
		Doc: "zeros f32 of the argument's shape (the gradient of a weight the loss does not depend on)",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			return []Type{{tensor.F32, a[0].Shape}}, nil
		}})
}

func sameTypes(a []Type, _ Attrs) ([]Type, error) {
	if !isFloat(a[0]) || !a[0].Equal(a[1]) {
		return nil, fmt.Errorf("dy %v and x %v must be equal f32 types", a[0], a[1])
	}
	return []Type{a[0]}, nil
}
