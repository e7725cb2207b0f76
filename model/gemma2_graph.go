// This file is Gemma 2's graph builder (family_gemma2.go):
//
//	x = embedding(tokens) · sqrt(dim)
//	per block l:
//	  h = rms_norm(x)·attn_norm
//	  a = attention(rope(h·Wqᵀ), rope(h·Wkᵀ), h·Wvᵀ; scale 1/sqrt(query_pre_attn_scalar),
//	      scores soft-capped, window on the even layers)·Woᵀ
//	  x = x + rms_norm(a)·post_attention_norm
//	  h = rms_norm(x)·ffn_norm
//	  x = x + rms_norm(geglu(h·Wgateᵀ, h·Wupᵀ)·Wdownᵀ)·post_ffw_norm
//	logits = softcap((rms_norm(x)·output_norm)·token_embdᵀ)
//
// The norm weights are GGUF's, 1 + Hugging Face's (see family_gemma2.go).
//
// Gemma 3 (family_gemma3.go) is the same block with per-head rms_norm of q and k before RoPE
// (QKNorm), no soft-caps, its local layers every layer but each SlidingPattern-th, RoPE base
// RopeLocalTheta on the local layers and RopeTheta, with linear scaling by RopeLinear
// (rope freq_scale = 1/RopeLinear), on the global ones.
package model

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// buildGemma2 writes Gemma 2's network (BuildGraph has checked cfg and set dtype). withFreqs
// (Llama 3 RoPE divisors) does not apply: Gemma 2 has no RoPE scaling.
func buildGemma2(cfg *Config, dtype func(name string) tensor.DType, withFreqs bool) (*graph.Graph, error) {
	if withFreqs {
		return nil, fmt.Errorf("model: %s has no RoPE frequency divisors (rope_freqs.weight)", cfg.Arch)
	}
	if cfg.AttnScalar <= 0 {
		return nil, fmt.Errorf("model: %s query_pre_attn_scalar = %v, must be positive", cfg.Arch, cfg.AttnScalar)
	}
	nb := newNetBuilder(cfg, dtype)
	b, mat, vec := nb.Builder, nb.mat, nb.vec
	tokens, pos, rows := nb.tokens, nb.pos, nb.rows
	embd := mat("token_embd.weight", cfg.Vocab, cfg.Dim)
	eps := graph.Attrs{"eps": graph.Float(float64(cfg.NormEps))}
	rope := func(x *graph.Value, heads int, local bool) *graph.Value {
		a := graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(int64(cfg.HeadDim)),
			"theta": graph.Float(cfg.RopeTheta), "neox": graph.Int(1)}
		switch {
		case local && cfg.RopeLocalTheta > 0:
			a["theta"] = graph.Float(cfg.RopeLocalTheta)
		case !local && cfg.RopeLinear > 0 && cfg.RopeLinear != 1:
			a["freq_scale"] = graph.Float(1 / cfg.RopeLinear)
		}
		return b.Op("rope", a, x, pos)
	}
	norm := func(x *graph.Value, name string) *graph.Value { return b.Op("rms_norm", eps, x, vec(name, cfg.Dim)) }

	x := b.Op("embedding", nil, embd, tokens)
	x = b.NamedOp("x.in", "scale", graph.Attrs{"by": graph.Float(float64(float32(math.Sqrt(float64(cfg.Dim)))))}, x)
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		h := norm(x, p+"attn_norm.weight")
		q := b.Op("matmul", nil, h, mat(p+"attn_q.weight", cfg.QDim(), cfg.Dim))
		k := b.Op("matmul", nil, h, mat(p+"attn_k.weight", cfg.KVDim(), cfg.Dim))
		v := b.Op("matmul", nil, h, mat(p+"attn_v.weight", cfg.KVDim(), cfg.Dim))
		if cfg.QKNorm {
			q = b.Op("rms_norm", eps, q, vec(p+"attn_q_norm.weight", cfg.HeadDim))
			k = b.Op("rms_norm", eps, k, vec(p+"attn_k_norm.weight", cfg.HeadDim))
		}
		local := cfg.IsLocalLayer(l)
		q, k = rope(q, cfg.Heads, local), rope(k, cfg.KVHeads, local)
		a := graph.Attrs{"layer": graph.Int(int64(l)), "heads": graph.Int(int64(cfg.Heads)),
			"kv_heads": graph.Int(int64(cfg.KVHeads)), "head_dim": graph.Int(int64(cfg.HeadDim)),
			"scale": graph.Float(1 / math.Sqrt(cfg.AttnScalar))}
		if cfg.AttnSoftcap > 0 {
			a["softcap"] = graph.Float(cfg.AttnSoftcap)
		}
		if local {
			a["window"] = graph.Int(int64(cfg.SlidingWindow))
		}
		att := b.Op("attention", a, q, k, v)
		o := b.Op("matmul", nil, att, mat(p+"attn_output.weight", cfg.Dim, cfg.QDim()))
		x = b.NamedOp(fmt.Sprintf("x.%d.attn", l), "add", nil, x, norm(o, p+"post_attention_norm.weight"))
		h = norm(x, p+"ffn_norm.weight")
		g := b.Op("matmul", nil, h, mat(p+"ffn_gate.weight", cfg.FFN, cfg.Dim))
		u := b.Op("matmul", nil, h, mat(p+"ffn_up.weight", cfg.FFN, cfg.Dim))
		d := b.Op("matmul", nil, b.Op("geglu", nil, g, u), mat(p+"ffn_down.weight", cfg.Dim, cfg.FFN))
		x = b.NamedOp(fmt.Sprintf("x.%d", l), "add", nil, x, norm(d, p+"post_ffw_norm.weight"))
	}
	last := b.Op("gather_rows", nil, x, rows)
	h := b.NamedOp(HiddenName, "rms_norm", eps, last, vec("output_norm.weight", cfg.Dim))
	if cfg.FinalSoftcap <= 0 {
		b.Output(b.NamedOp(OutputLogits, "matmul", nil, h, embd))
		return b.Finish()
	}
	z := b.Op("matmul", nil, h, embd)
	b.Output(b.NamedOp(OutputLogits, "softcap", graph.Attrs{"cap": graph.Float(cfg.FinalSoftcap)}, z))
	return b.Finish()
}
