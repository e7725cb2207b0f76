// This file is the Llama family's graph builder (Llama 2/3, Mistral, Qwen2/2.5, Qwen3): the
// network written once, as a graph.Graph, over a ragged batch of n rows (token ids and their
// positions) whose logits are wanted for the rows listed in logit_rows. Serving runs it over
// the paged KV cache; training over whole sequences (the attention op is the same). The
// families registered in family_llama.go, family_qwen2.go and family_qwen3.go share it.
//
// The builder writes plain ops (matmul per weight, silu then mul, add then rms_norm); the
// compiler's passes fuse them. With experts (Mixtral) the feed-forward is one moe op.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// buildLlama writes the Llama family's network (BuildGraph has checked cfg and set dtype).
func buildLlama(cfg *Config, dtype func(name string) tensor.DType, withFreqs bool) (*graph.Graph, error) {
	nb := newNetBuilder(cfg, dtype)
	b, mat, experts, vec := nb.Builder, nb.mat, nb.experts, nb.vec
	tokens, pos, rows := nb.tokens, nb.pos, nb.rows
	embd := mat("token_embd.weight", cfg.Vocab, cfg.Dim)
	var freqs *graph.Value
	if withFreqs {
		freqs = vec(RopeFreqsName, cfg.HeadDim/2)
	}
	eps := graph.Attrs{"eps": graph.Float(float64(cfg.NormEps))}
	rope := func(x *graph.Value, heads int) *graph.Value {
		a := graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(int64(cfg.HeadDim)),
			"theta": graph.Float(cfg.RopeTheta)}
		if cfg.RopeNeoX {
			a["neox"] = graph.Int(1)
		}
		if freqs != nil {
			return b.Op("rope", a, x, pos, freqs)
		}
		return b.Op("rope", a, x, pos)
	}

	x := b.NamedOp("x.in", "embedding", nil, embd, tokens)
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		h := b.Op("rms_norm", eps, x, vec(p+"attn_norm.weight", cfg.Dim))
		q := b.Op("matmul", nil, h, mat(p+"attn_q.weight", cfg.QDim(), cfg.Dim))
		k := b.Op("matmul", nil, h, mat(p+"attn_k.weight", cfg.KVDim(), cfg.Dim))
		v := b.Op("matmul", nil, h, mat(p+"attn_v.weight", cfg.KVDim(), cfg.Dim))
		if cfg.QKVBias {
			q = b.Op("add", nil, q, vec(p+"attn_q.bias", cfg.QDim()))
			k = b.Op("add", nil, k, vec(p+"attn_k.bias", cfg.KVDim()))
			v = b.Op("add", nil, v, vec(p+"attn_v.bias", cfg.KVDim()))
		}
		if cfg.QKNorm {
			q = b.Op("rms_norm", eps, q, vec(p+"attn_q_norm.weight", cfg.HeadDim))
			k = b.Op("rms_norm", eps, k, vec(p+"attn_k_norm.weight", cfg.HeadDim))
		}
		q, k = rope(q, cfg.Heads), rope(k, cfg.KVHeads)
		att := b.Op("attention", graph.Attrs{"layer": graph.Int(int64(l)), "heads": graph.Int(int64(cfg.Heads)),
			"kv_heads": graph.Int(int64(cfg.KVHeads)), "head_dim": graph.Int(int64(cfg.HeadDim))}, q, k, v)
		o := b.Op("matmul", nil, att, mat(p+"attn_output.weight", cfg.Dim, cfg.QDim()))
		x = b.NamedOp(fmt.Sprintf("x.%d.attn", l), "add", nil, x, o)
		h = b.Op("rms_norm", eps, x, vec(p+"ffn_norm.weight", cfg.Dim))
		if cfg.Experts > 0 {
			// Mixtral: softmax router, top ExpertsUsed, their weights renormalised; Qwen2-MoE:
			// not renormalised, plus a shared expert scaled by the sigmoid of its gate.
			f := cfg.ExpertWidth()
			a := graph.Attrs{"experts_used": graph.Int(int64(cfg.ExpertsUsed))}
			if cfg.ExpertsNorm {
				a["norm"] = graph.Int(1)
			}
			args := []*graph.Value{h, mat(p+"ffn_gate_inp.weight", cfg.Experts, cfg.Dim),
				experts(p+"ffn_gate_exps.weight", f, cfg.Dim), experts(p+"ffn_up_exps.weight", f, cfg.Dim),
				experts(p+"ffn_down_exps.weight", cfg.Dim, f)}
			if fs := cfg.SharedFFN; fs > 0 {
				args = append(args, mat(p+"ffn_gate_shexp.weight", fs, cfg.Dim), mat(p+"ffn_up_shexp.weight", fs, cfg.Dim),
					mat(p+"ffn_down_shexp.weight", cfg.Dim, fs), mat(p+"ffn_gate_inp_shexp.weight", 1, cfg.Dim))
			}
			x = b.NamedOp(fmt.Sprintf("x.%d", l), "add", nil, x, b.Op("moe", a, args...))
			continue
		}
		g := b.Op("matmul", nil, h, mat(p+"ffn_gate.weight", cfg.FFN, cfg.Dim))
		u := b.Op("matmul", nil, h, mat(p+"ffn_up.weight", cfg.FFN, cfg.Dim))
		a := b.Op("mul", nil, b.Op("silu", nil, g), u)
		d := b.Op("matmul", nil, a, mat(p+"ffn_down.weight", cfg.Dim, cfg.FFN))
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
