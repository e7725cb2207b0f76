// This file registers mla_attention, DeepSeek-V2's multi-head latent attention over a KV
// cache that holds per token only the compressed latent c (kv_lora_rank wide, already
// RMS-normed) and one RoPE key shared by all heads (rope wide): not the heads' keys and values.
//
// Arguments: q f32[n, heads*(nope+rope)] (each head's non-rotated part then its rotated part,
// before RoPE), c f32[n, R], kpe f32[n, rope] (before RoPE), pos i32[n], and kv_b [heads*(nope+v), R]
// (attn_kv_b: per head, nope rows W_UK_h then v rows W_UV_h). The op rotates the rope parts of q
// and kpe at pos (adjacent pairs; neox=1: halves), writes [c | rotated kpe] into the layer's K
// pool (serving) and computes, per head h,
//
//	k_t = [W_UK_h c_t | kpe_t],  v_t = W_UV_h c_t
//	out_h = Σ_t softmax_t(scale · q_h·k_t) v_t          (scale default 1/sqrt(nope+rope))
//
// over the row's sequence up to its position. The reference (graph/ref) computes exactly that;
// the serving kernel (graph/exec) computes the absorbed form, which never expands a key or value:
// q_h·k_t = (W_UK_hᵀ q_nope_h)·c_t + q_pe_h·kpe_t and out_h = W_UV_h (Σ_t p_t c_t).
package graph

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	register(&OpDef{Name: "mla_attention", MinArgs: 5, MaxArgs: 5,
		Attrs: []AttrSpec{{"layer", AttrInt, true}, {"heads", AttrInt, true}, {"nope", AttrInt, true},
			{"rope", AttrInt, true}, {"v_dim", AttrInt, true}, {"theta", AttrFloat, true},
			{"neox", AttrInt, false}, {"scale", AttrFloat, false}, {"mscale", AttrFloat, false},
			{"yarn_factor", AttrFloat, false}, {"yarn_orig_ctx", AttrInt, false}, {"yarn_beta_fast", AttrFloat, false},
			{"yarn_beta_slow", AttrFloat, false}},
		Doc: "multi-head latent attention: q f32[n,heads*(nope+rope)], latent c f32[n,R], rope key kpe f32[n,rope], pos i32[n], kv_b [heads*(nope+v_dim),R] -> f32[n,heads*v_dim]; " +
			"q's rope parts and kpe rotated at pos, [c|kpe] written into the layer's paged K pool (serving), causal attention with k = [W_UK c | kpe], v = W_UV c " +
			"(the kernel: absorbed into q and the output), scores times scale (default 1/sqrt(nope+rope)); " +
			"RoPE's cos and sin times mscale (default 1), YaRN-scaled when yarn_factor is set (yarn_orig_ctx, yarn_beta_fast 32, yarn_beta_slow 1: ggml's rope with ext_factor 1)",
		Infer: mlaType})
	sideEffectOps["mla_attention"] = true
}

func mlaType(a []Type, at Attrs) ([]Type, error) {
	h, nope, rope, vd := at.Int("heads", 0), at.Int("nope", 0), at.Int("rope", 0), at.Int("v_dim", 0)
	if err := want(h > 0 && nope > 0 && rope > 0 && vd > 0 && rope%2 == 0,
		"heads %d, nope %d, rope %d, v_dim %d: want positive, rope even", h, nope, rope, vd); err != nil {
		return nil, err
	}
	if err := want(at.Int("layer", -1) >= 0 && at.Float("scale", 0) >= 0 && at.Float("theta", 0) > 0,
		"layer %d, scale %v, theta %v: want layer >= 0, scale >= 0, theta > 0", at.Int("layer", -1), at.Float("scale", 0), at.Float("theta", 0)); err != nil {
		return nil, err
	}
	if err := yarnAttrs(at); err != nil {
		return nil, err
	}
	q, c, kpe, pos, kvb := a[0], a[1], a[2], a[3], a[4]
	if err := want(isFloat(q) && len(q.Shape) == 2 && q.Shape[1] == D(int(h*(nope+rope))), "q must be f32[n,%d], is %v", h*(nope+rope), q); err != nil {
		return nil, err
	}
	n := q.Shape[0]
	if err := want(isFloat(c) && len(c.Shape) == 2 && c.Shape[0] == n && c.Shape[1].Known() && c.Shape[1].N > 0, "c must be f32[%v,R], is %v", n, c); err != nil {
		return nil, err
	}
	r := c.Shape[1]
	if err := want(kpe.Equal(Type{tensor.F32, Shape{n, D(int(rope))}}), "kpe must be f32[%v,%d], is %v", n, rope, kpe); err != nil {
		return nil, err
	}
	if err := want(pos.DType == tensor.I32 && pos.Shape.Equal(Shape{n}), "pos must be i32[%v], is %v", n, pos); err != nil {
		return nil, err
	}
	if err := want(kvb.DType != tensor.I32 && kvb.Shape.Equal(Shape{D(int(h * (nope + vd))), r}),
		"kv_b must be [%d,%v], is %v", h*(nope+vd), r, kvb); err != nil {
		return nil, err
	}
	return []Type{{tensor.F32, Shape{n, D(int(h * vd))}}}, nil
}

// YarnAttrs are the YaRN attributes of rope, qkv_rope and mla_attention (a factor >= 1, the
// original context, the ramp's betas): ggml's rope with ext_factor 1 (kernels.Yarn).
var YarnAttrs = []AttrSpec{{"yarn_factor", AttrFloat, false}, {"yarn_orig_ctx", AttrInt, false},
	{"yarn_beta_fast", AttrFloat, false}, {"yarn_beta_slow", AttrFloat, false}}

// CopyYarn copies from's YaRN attributes (those of YarnAttrs present) into to.
func CopyYarn(to, from Attrs) {
	for _, s := range YarnAttrs {
		if v, ok := from[s.Name]; ok {
			to[s.Name] = v
		}
	}
}

// yarnAttrs checks the YaRN attributes: none, or a factor >= 1 with a positive original
// context and positive betas; mscale positive when given.
func yarnAttrs(at Attrs) error {
	if _, ok := at["mscale"]; ok && !(at.Float("mscale", 0) > 0) {
		return fmt.Errorf("mscale %v: want positive", at.Float("mscale", 0))
	}
	if _, ok := at["yarn_factor"]; !ok {
		for _, k := range []string{"yarn_orig_ctx", "yarn_beta_fast", "yarn_beta_slow"} {
			if _, set := at[k]; set {
				return fmt.Errorf("%s without yarn_factor", k)
			}
		}
		return nil
	}
	f, o := at.Float("yarn_factor", 0), at.Int("yarn_orig_ctx", 0)
	fast, slow := at.Float("yarn_beta_fast", 32), at.Float("yarn_beta_slow", 1)
	return want(f >= 1 && f < 1e9 && o > 0 && fast > 0 && slow > 0,
		"yarn_factor %v, yarn_orig_ctx %d, betas %v/%v: want factor >= 1, a positive context and betas", f, o, fast, slow)
}

// mlaCost: per row, W_UK absorbed into q and W_UV applied to the context (heads·(nope+v)·R
// multiply-adds each), then per position of its context the scores and the weighted latent
// (heads·(2R+rope)); bytes: the arguments and result, kv_b, the [c|kpe] row written and the
// context's rows read.
func mlaCost(n *Node, env CostEnv, io func() (int64, error)) (Cost, error) {
	b, err := io()
	if err != nil {
		return Cost{}, err
	}
	h, nope, rope, vd := n.Attrs.Int("heads", 0), n.Attrs.Int("nope", 0), n.Attrs.Int("rope", 0), n.Attrs.Int("v_dim", 0)
	r := int64(n.Args[1].Type.Shape[1].N)
	rows, ok := n.Args[0].Type.Shape[:1].Elems(env.Sym)
	if !ok {
		return Cost{}, fmt.Errorf("the rows of %s %v are not bound", n.Args[0], n.Args[0].Type)
	}
	var ctx int64
	for i := range rows {
		c := int64(i + 1)
		if env.Context != nil && i < len(env.Context) {
			c = int64(env.Context[i])
		}
		ctx += c
	}
	b += 4 * (r + rope) * (ctx + int64(rows))
	f := 2*int64(rows)*h*(nope+vd)*r + 2*ctx*h*(2*r+rope) + 5*h*ctx
	return Cost{FLOPs: f, Bytes: b}, nil
}
