// This file is gpt-oss's graph builder (family_gptoss.go):
//
//	x = embedding(tokens)
//	per block l:
//	  h = rms_norm(x)·attn_norm
//	  q, k, v = h·Wqᵀ + bq, h·Wkᵀ + bk, h·Wvᵀ + bv; q, k = rope(q), rope(k) (rotate-half, YaRN)
//	  a = attention(q, k, v; sinks attn_sinks, window SlidingWindow on the even layers)
//	  x = x + a·Woᵀ + bo
//	  h = rms_norm(x)·post_attention_norm
//	  x = x + moe(h): router h·Wrᵀ + br, top experts_used logits softmaxed, per chosen expert
//	      (swiglu_oai(h·Wgᵀ + bg, h·Wuᵀ + bu))·Wdᵀ + bd
//	logits = (rms_norm(x)·output_norm)·Woutᵀ
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// buildGptOss writes gpt-oss's network (BuildGraph has checked cfg and set dtype).
func buildGptOss(cfg *Config, dtype func(name string) tensor.DType, withFreqs bool) (*graph.Graph, error) {
	if withFreqs {
		return nil, fmt.Errorf("model: %s has no RoPE frequency divisors (rope_freqs.weight)", cfg.Arch)
	}
	if err := checkGptOss(cfg); err != nil {
		return nil, err
	}
	nb := newNetBuilder(cfg, dtype)
	b, mat, experts, vec := nb.Builder, nb.mat, nb.experts, nb.vec
	tokens, pos, rows := nb.tokens, nb.pos, nb.rows
	embd := mat("token_embd.weight", cfg.Vocab, cfg.Dim)
	eps := graph.Attrs{"eps": graph.Float(float64(cfg.NormEps))}
	rope := func(x *graph.Value, heads int) *graph.Value {
		a := graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(int64(cfg.HeadDim)),
			"theta": graph.Float(cfg.RopeTheta), "neox": graph.Int(1)}
		if y := cfg.Yarn; y != nil {
			fast, slow := y.Betas()
			a["yarn_factor"], a["yarn_orig_ctx"] = graph.Float(y.Factor), graph.Int(int64(y.OrigCtx))
			a["yarn_beta_fast"], a["yarn_beta_slow"] = graph.Float(fast), graph.Float(slow)
		}
		return b.Op("rope", a, x, pos)
	}
	linear := func(x *graph.Value, name string, rows, cols int) *graph.Value {
		return b.Op("add", nil, b.Op("matmul", nil, x, mat(name+".weight", rows, cols)), vec(name+".bias", rows))
	}
	e, f, d := cfg.Experts, cfg.ExpertWidth(), cfg.Dim

	x := b.NamedOp("x.in", "embedding", nil, embd, tokens)
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		h := b.Op("rms_norm", eps, x, vec(p+"attn_norm.weight", d))
		q := rope(linear(h, p+"attn_q", cfg.QDim(), d), cfg.Heads)
		k := rope(linear(h, p+"attn_k", cfg.KVDim(), d), cfg.KVHeads)
		v := linear(h, p+"attn_v", cfg.KVDim(), d)
		a := graph.Attrs{"layer": graph.Int(int64(l)), "heads": graph.Int(int64(cfg.Heads)),
			"kv_heads": graph.Int(int64(cfg.KVHeads)), "head_dim": graph.Int(int64(cfg.HeadDim))}
		if cfg.IsLocalLayer(l) {
			a["window"] = graph.Int(int64(cfg.SlidingWindow))
		}
		att := b.Op("attention", a, q, k, v, vec(p+"attn_sinks.weight", cfg.Heads))
		x = b.NamedOp(fmt.Sprintf("x.%d.attn", l), "add", nil, x, linear(att, p+"attn_output", d, cfg.QDim()))
		h = b.Op("rms_norm", eps, x, vec(p+"post_attention_norm.weight", d))
		ma := graph.Attrs{"experts_used": graph.Int(int64(cfg.ExpertsUsed)), "norm": graph.Int(1),
			"expert_bias": graph.Int(1), "act": graph.Str(graph.MoESwiGLUOAI), "limit": graph.Float(gptossLimit)}
		m := b.Op("moe", ma, h, mat(p+"ffn_gate_inp.weight", e, d),
			experts(p+"ffn_gate_exps.weight", f, d), experts(p+"ffn_up_exps.weight", f, d), experts(p+"ffn_down_exps.weight", d, f),
			vec(p+"ffn_gate_inp.bias", e), vec(p+"ffn_gate_exps.bias", e, f), vec(p+"ffn_up_exps.bias", e, f), vec(p+"ffn_down_exps.bias", e, d))
		x = b.NamedOp(fmt.Sprintf("x.%d", l), "add", nil, x, m)
	}
	last := b.Op("gather_rows", nil, x, rows)
	h := b.NamedOp(HiddenName, "rms_norm", eps, last, vec("output_norm.weight", d))
	out := embd
	if !cfg.Tied {
		out = mat("output.weight", cfg.Vocab, d)
	}
	b.Output(b.NamedOp(OutputLogits, "matmul", nil, h, out))
	return b.Finish()
}
