// This file is the deepseek2 family's graph builder (family_deepseek2.go): per block, MLA
// attention (q directly or through its low-rank pair; the kv latent and the RoPE key from
// attn_kv_a_mqa, split; the latent RMS-normed; the op mla_attention caching [latent | rope key]
// and attending through attn_kv_b), then a SwiGLU feed-forward in the DenseLead first blocks
// and the moe op (with the shared experts) in the others.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

func buildDeepseek2(cfg *Config, dtype func(name string) tensor.DType, _ bool) (*graph.Graph, error) {
	nb := newNetBuilder(cfg, dtype)
	b, mat, experts, vec := nb.Builder, nb.mat, nb.experts, nb.vec
	tokens, pos, rows := nb.tokens, nb.pos, nb.rows
	embd := mat("token_embd.weight", cfg.Vocab, cfg.Dim)
	eps := graph.Attrs{"eps": graph.Float(float64(cfg.NormEps))}
	nope, R, H := cfg.HeadDim-cfg.RopeDim, cfg.KVLoraRank, cfg.Heads
	split := graph.Attrs{"sizes": graph.IntList(int64(R), int64(cfg.RopeDim))}
	mla := graph.Attrs{"heads": graph.Int(int64(H)), "nope": graph.Int(int64(nope)), "rope": graph.Int(int64(cfg.RopeDim)),
		"v_dim": graph.Int(int64(cfg.VHeadDim)), "theta": graph.Float(cfg.RopeTheta),
		"scale": graph.Float(deepseekAttnScale(cfg))}
	deepseekRopeAttrs(cfg, mla)
	moe := graph.Attrs{"experts_used": graph.Int(int64(cfg.ExpertsUsed))}
	if cfg.ExpertsNorm {
		moe["norm"] = graph.Int(1)
	}
	if cfg.ExpertsSigmoid {
		moe["gating"] = graph.Str(graph.MoESigmoid)
	}
	if cfg.ExpertsScale != 0 && cfg.ExpertsScale != 1 {
		moe["scale"] = graph.Float(cfg.ExpertsScale)
	}
	deepseekMoEAttrs(cfg, moe)

	x := b.NamedOp("x.in", "embedding", nil, embd, tokens)
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		h := b.Op("rms_norm", eps, x, vec(p+"attn_norm.weight", cfg.Dim))
		var q *graph.Value
		if cfg.QLoraRank > 0 {
			q = b.Op("matmul", nil, h, mat(p+"attn_q_a.weight", cfg.QLoraRank, cfg.Dim))
			q = b.Op("rms_norm", eps, q, vec(p+"attn_q_a_norm.weight", cfg.QLoraRank))
			q = b.Op("matmul", nil, q, mat(p+"attn_q_b.weight", cfg.QDim(), cfg.QLoraRank))
		} else {
			q = b.Op("matmul", nil, h, mat(p+"attn_q.weight", cfg.QDim(), cfg.Dim))
		}
		kva := b.Op("matmul", nil, h, mat(p+"attn_kv_a_mqa.weight", R+cfg.RopeDim, cfg.Dim))
		parts := b.OpN("split", split, []*graph.Value{kva})
		lat := b.Op("rms_norm", eps, parts[0], vec(p+"attn_kv_a_norm.weight", R))
		a := graph.Attrs{"layer": graph.Int(int64(l))}
		for k, v := range mla {
			a[k] = v
		}
		att := b.Op("mla_attention", a, q, lat, parts[1], pos, mat(p+"attn_kv_b.weight", H*(nope+cfg.VHeadDim), R))
		o := b.Op("matmul", nil, att, mat(p+"attn_output.weight", cfg.Dim, H*cfg.VHeadDim))
		x = b.NamedOp(fmt.Sprintf("x.%d.attn", l), "add", nil, x, o)
		h = b.Op("rms_norm", eps, x, vec(p+"ffn_norm.weight", cfg.Dim))
		if l >= cfg.DenseLead {
			f := cfg.ExpertWidth()
			args := []*graph.Value{h, mat(p+"ffn_gate_inp.weight", cfg.Experts, cfg.Dim),
				experts(p+"ffn_gate_exps.weight", f, cfg.Dim), experts(p+"ffn_up_exps.weight", f, cfg.Dim),
				experts(p+"ffn_down_exps.weight", cfg.Dim, f)}
			if fs := cfg.SharedFFN; fs > 0 {
				args = append(args, mat(p+"ffn_gate_shexp.weight", fs, cfg.Dim), mat(p+"ffn_up_shexp.weight", fs, cfg.Dim),
					mat(p+"ffn_down_shexp.weight", cfg.Dim, fs))
			}
			if cfg.ExpertsBias {
				args = append(args, vec(p+"exp_probs_b.bias", cfg.Experts))
			}
			x = b.NamedOp(fmt.Sprintf("x.%d", l), "add", nil, x, b.Op("moe", moe, args...))
			continue
		}
		g := b.Op("matmul", nil, h, mat(p+"ffn_gate.weight", cfg.FFN, cfg.Dim))
		u := b.Op("matmul", nil, h, mat(p+"ffn_up.weight", cfg.FFN, cfg.Dim))
		d := b.Op("matmul", nil, b.Op("mul", nil, b.Op("silu", nil, g), u), mat(p+"ffn_down.weight", cfg.Dim, cfg.FFN))
		x = b.NamedOp(fmt.Sprintf("x.%d", l), "add", nil, x, d)
	}
	last := b.Op("gather_rows", nil, x, rows)
	h := b.NamedOp(HiddenName, "rms_norm", eps, last, vec("output_norm.weight", cfg.Dim))
	out := embd
	if !cfg.Tied {
		out = mat("output.weight", cfg.Vocab, cfg.Dim)
	}
	b.Output(b.NamedOp(OutputLogits, "matmul", nil, h, out))
	return b.Finish()
}
