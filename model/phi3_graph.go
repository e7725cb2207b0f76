// This file is the phi3 family's graph builder: the Llama block (llama_graph.go) with its
// fused projections cut by split ops (attn_qkv -> q, k, v; ffn_up -> gate, up), NeoX RoPE by
// the LongRoPE divisors and attention factor when the model has them, and the sliding window
// when it binds. The serving passes then fuse it as they fuse Llama's (split's pieces feed
// qkv_rope and swiglu).
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// buildPhi3 writes the phi3 network (BuildGraph has checked cfg and set dtype). withFreqs
// (rope_freqs.weight, which llama.cpp prefers to the LongRoPE pair) takes precedence.
func buildPhi3(cfg *Config, dtype func(name string) tensor.DType, withFreqs bool) (*graph.Graph, error) {
	nb := newNetBuilder(cfg, dtype)
	b, mat, vec := nb.Builder, nb.mat, nb.vec
	tokens, pos, rows := nb.tokens, nb.pos, nb.rows
	embd := mat("token_embd.weight", cfg.Vocab, cfg.Dim)
	var freqs *graph.Value
	mscale := 1.0
	switch r := cfg.LongRope; {
	case withFreqs:
		freqs = vec(RopeFreqsName, cfg.HeadDim/2)
	case r != nil && r.UseLong(cfg.CtxLen):
		freqs = vec(RopeFactorsLong, cfg.HeadDim/2)
	case r != nil:
		freqs = vec(RopeFactorsShort, cfg.HeadDim/2)
	}
	if r := cfg.LongRope; r != nil {
		mscale = r.AttnFactor
	}
	eps := graph.Attrs{"eps": graph.Float(float64(cfg.NormEps))}
	rope := func(x *graph.Value, heads int) *graph.Value {
		a := graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(int64(cfg.HeadDim)),
			"theta": graph.Float(cfg.RopeTheta), "neox": graph.Int(1)}
		if mscale != 1 {
			a["mscale"] = graph.Float(mscale)
		}
		if freqs != nil {
			return b.Op("rope", a, x, pos, freqs)
		}
		return b.Op("rope", a, x, pos)
	}
	qkvSizes := graph.Attrs{"sizes": graph.IntList(int64(cfg.QDim()), int64(cfg.KVDim()), int64(cfg.KVDim()))}
	ffnSizes := graph.Attrs{"sizes": graph.IntList(int64(cfg.FFN), int64(cfg.FFN))}
	attn := graph.Attrs{"heads": graph.Int(int64(cfg.Heads)), "kv_heads": graph.Int(int64(cfg.KVHeads)),
		"head_dim": graph.Int(int64(cfg.HeadDim))}
	if cfg.SlidingWindow > 0 && (cfg.CtxLen == 0 || cfg.SlidingWindow < cfg.CtxLen) {
		attn["window"] = graph.Int(int64(cfg.SlidingWindow)) // a window at least the context never binds
	}

	x := b.NamedOp("x.in", "embedding", nil, embd, tokens)
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		h := b.Op("rms_norm", eps, x, vec(p+"attn_norm.weight", cfg.Dim))
		qkv := b.Op("matmul", nil, h, mat(p+"attn_qkv.weight", phi3QKVRows(cfg), cfg.Dim))
		parts := b.OpN("split", qkvSizes, []*graph.Value{qkv})
		q, k := rope(parts[0], cfg.Heads), rope(parts[1], cfg.KVHeads)
		a := graph.Attrs{"layer": graph.Int(int64(l))}
		for key, v := range attn {
			a[key] = v
		}
		att := b.Op("attention", a, q, k, parts[2])
		o := b.Op("matmul", nil, att, mat(p+"attn_output.weight", cfg.Dim, cfg.QDim()))
		x = b.NamedOp(fmt.Sprintf("x.%d.attn", l), "add", nil, x, o)
		h = b.Op("rms_norm", eps, x, vec(p+"ffn_norm.weight", cfg.Dim))
		gu := b.Op("matmul", nil, h, mat(p+"ffn_up.weight", 2*cfg.FFN, cfg.Dim))
		gate := b.OpN("split", ffnSizes, []*graph.Value{gu})
		m := b.Op("mul", nil, b.Op("silu", nil, gate[0]), gate[1])
		d := b.Op("matmul", nil, m, mat(p+"ffn_down.weight", cfg.Dim, cfg.FFN))
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
