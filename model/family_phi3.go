// This file registers phi3 (Phi-3 mini/small/medium, Phi-3.5-mini, Phi-4): the Llama block with
// the q/k/v projections fused into one matrix (attn_qkv: q, k, v rows stacked) and the FFN's
// gate and up fused into ffn_up (gate rows, then up rows), NeoX RoPE, an untied output, an
// optional sliding window, and LongRoPE scaling: per-frequency divisors for contexts up to the
// original length (rope_factors_short.weight) and beyond it (rope_factors_long.weight), with
// cos and sin multiplied by an attention factor. Its builder is buildPhi3 (phi3_graph.go).
//
// llama.cpp's names and keys: phi3.attention.sliding_window, phi3.rope.scaling.
// original_context_length, phi3.rope.scaling.attn_factor; Hugging Face's: qkv_proj,
// gate_up_proj, sliding_window, original_max_position_embeddings, rope_scaling {type
// longrope|su, long_factor, short_factor}.
package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/tensor"
)

// GGUF names of Phi-3's LongRoPE divisors ([HeadDim/2], F32, one pair for all blocks).
const (
	RopeFactorsLong  = "rope_factors_long.weight"
	RopeFactorsShort = "rope_factors_short.weight"
)

// LongRope is Phi-3's LongRoPE ("su") scaling. As llama.cpp does, a model whose context
// (Config.CtxLen) exceeds OrigCtx rotates by the long divisors, else by the short ones; cos
// and sin are multiplied by AttnFactor in both cases.
type LongRope struct {
	OrigCtx     int       // original_max_position_embeddings (GGUF rope.scaling.original_context_length)
	AttnFactor  float64   // rope.scaling.attn_factor; 1 = none
	Long, Short []float32 // the divisors, [HeadDim/2] each
}

// UseLong says whether a model of context ctxLen rotates by the long divisors.
func (r *LongRope) UseLong(ctxLen int) bool { return ctxLen > r.OrigCtx }

// LongRopeAttnFactor is the attention factor llama.cpp's converter derives for a LongRoPE
// model of context ctxLen trained at origCtx: sqrt(1 + ln(s)/ln(origCtx)), s = ctxLen/origCtx,
// 1 when s <= 1. The result is rounded to float32, as GGUF stores it.
func LongRopeAttnFactor(ctxLen, origCtx int) float64 {
	s := float64(ctxLen) / float64(origCtx)
	if origCtx <= 1 || s <= 1 {
		return 1
	}
	return float64(float32(math.Sqrt(1 + math.Log(s)/math.Log(float64(origCtx)))))
}

func init() {
	Register(&Family{
		Arch: "phi3", HFModelType: "phi3", HFArchitecture: "Phi3ForCausalLM",
		RopeTheta: 10000, NormEps: 1e-5,
		Fix:      func(c *Config) { c.RopeNeoX = true },
		FromGGUF: phi3FromGGUF, ToGGUF: phi3ToGGUF,
		FromHF: phi3FromHF, ToHF: phi3ToHF,
		Shapes: phi3Shapes, Build: buildPhi3, Names: phi3Names,
		ConfigTensors: phi3ConfigTensors,
	})
}

var phi3Names = NameMap{
	Global: map[string]string{
		"model.embed_tokens.weight": "token_embd.weight",
		"model.norm.weight":         "output_norm.weight",
		"lm_head.weight":            "output.weight",
	},
	BlockPrefix: "model.layers.",
	Block: map[string]string{
		"input_layernorm.weight":          "attn_norm.weight",
		"self_attn.qkv_proj.weight":       "attn_qkv.weight",
		"self_attn.o_proj.weight":         "attn_output.weight",
		"post_attention_layernorm.weight": "ffn_norm.weight",
		"mlp.gate_up_proj.weight":         "ffn_up.weight",
		"mlp.down_proj.weight":            "ffn_down.weight",
	},
	Skip: []string{"self_attn.rotary_emb.inv_freq", "self_attn.rotary_emb.long_inv_freq", "self_attn.rotary_emb.short_inv_freq"},
}

// phi3QKVRows is the row count of attn_qkv: q, k, v stacked.
func phi3QKVRows(c *Config) int { return c.QDim() + 2*c.KVDim() }

func phi3Shapes(c *Config) map[string][]int {
	s := map[string][]int{
		"token_embd.weight":  {c.Vocab, c.Dim},
		"output_norm.weight": {c.Dim},
	}
	if !c.Tied {
		s["output.weight"] = []int{c.Vocab, c.Dim}
	}
	if c.LongRope != nil {
		s[RopeFactorsLong] = []int{c.HeadDim / 2}
		s[RopeFactorsShort] = []int{c.HeadDim / 2}
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		s[p+"attn_norm.weight"] = []int{c.Dim}
		s[p+"attn_qkv.weight"] = []int{phi3QKVRows(c), c.Dim}
		s[p+"attn_output.weight"] = []int{c.Dim, c.QDim()}
		s[p+"ffn_norm.weight"] = []int{c.Dim}
		s[p+"ffn_up.weight"] = []int{2 * c.FFN, c.Dim}
		s[p+"ffn_down.weight"] = []int{c.Dim, c.FFN}
	}
	return s
}

// phi3CheckFused checks the fused tensors' shapes against the hyper-parameters, naming both
// (the generic check of New names only the tensor).
func phi3CheckFused(c *Config, shape func(name string) ([]int, bool), field func(string) string) error {
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		if s, ok := shape(p + "attn_qkv.weight"); ok && (len(s) != 2 || s[0] != phi3QKVRows(c) || s[1] != c.Dim) {
			return fmt.Errorf("%sattn_qkv.weight: shape %v does not fit %s %d, %s %d, head dim %d and %s %d "+
				"(q, k, v stacked: want [%d %d])", p, s, field("heads"), c.Heads, field("kv_heads"), c.KVHeads, c.HeadDim,
				field("dim"), c.Dim, phi3QKVRows(c), c.Dim)
		}
		if s, ok := shape(p + "ffn_up.weight"); ok && (len(s) != 2 || s[0] != 2*c.FFN || s[1] != c.Dim) {
			return fmt.Errorf("%sffn_up.weight: shape %v does not fit %s %d and %s %d (gate and up stacked: want [%d %d])",
				p, s, field("ffn"), c.FFN, field("dim"), c.Dim, 2*c.FFN, c.Dim)
		}
	}
	return nil
}

func phi3FromGGUF(f *gguf.File, c *Config) error {
	a := c.Arch
	if v, ok := f.Uint(a + ".attention.sliding_window"); ok {
		if v > 1<<40 {
			return fmt.Errorf("%s.attention.sliding_window = %d out of range", a, v)
		}
		c.SlidingWindow = int(v)
	}
	field := func(k string) string {
		return map[string]string{"heads": a + ".attention.head_count", "kv_heads": a + ".attention.head_count_kv",
			"dim": a + ".embedding_length", "ffn": a + ".feed_forward_length"}[k]
	}
	shape := func(name string) ([]int, bool) {
		t, ok := f.Tensor(name)
		if !ok {
			return nil, false
		}
		return t.Shape, true
	}
	if err := phi3CheckFused(c, shape, field); err != nil {
		return err
	}
	long, hasLong := f.Tensor(RopeFactorsLong)
	short, hasShort := f.Tensor(RopeFactorsShort)
	if !hasLong && !hasShort {
		return nil
	}
	if !hasLong || !hasShort {
		return fmt.Errorf("LongRoPE needs both %s and %s; the file has one", RopeFactorsLong, RopeFactorsShort)
	}
	r := &LongRope{OrigCtx: c.CtxLen, AttnFactor: 1}
	if v, ok := f.Uint(a + ".rope.scaling.original_context_length"); ok {
		if v == 0 || v > 1<<40 {
			return fmt.Errorf("%s.rope.scaling.original_context_length = %d out of range", a, v)
		}
		r.OrigCtx = int(v)
	}
	if v, ok := f.Float(a + ".rope.scaling.attn_factor"); ok {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s.rope.scaling.attn_factor = %v, must be positive", a, v)
		}
		r.AttnFactor = v
	}
	for _, x := range []struct {
		t   *tensor.Tensor
		dst *[]float32
	}{{long, &r.Long}, {short, &r.Short}} {
		if len(x.t.Shape) != 1 || x.t.Shape[0] != c.HeadDim/2 {
			return fmt.Errorf("%s: shape %v, head dim %d wants [%d]", x.t.Name, x.t.Shape, c.HeadDim, c.HeadDim/2)
		}
		v, err := x.t.Float32()
		if err != nil {
			return fmt.Errorf("%s: %w", x.t.Name, err)
		}
		*x.dst = v
	}
	c.LongRope = r
	return checkLongRope(c)
}

// checkLongRope checks the divisors: as many as half the head dim, each positive and finite.
func checkLongRope(c *Config) error {
	r := c.LongRope
	for _, x := range []struct {
		name string
		v    []float32
	}{{"long_factor", r.Long}, {"short_factor", r.Short}} {
		if len(x.v) != c.HeadDim/2 {
			return fmt.Errorf("rope_scaling.%s has %d values, head dim %d wants %d", x.name, len(x.v), c.HeadDim, c.HeadDim/2)
		}
		for i, f := range x.v {
			if !(f > 0) || math.IsInf(float64(f), 0) {
				return fmt.Errorf("rope_scaling.%s[%d] = %v, must be positive and finite", x.name, i, f)
			}
		}
	}
	if r.OrigCtx <= 0 {
		return fmt.Errorf("original_max_position_embeddings = %d, must be positive", r.OrigCtx)
	}
	return nil
}

func phi3ToGGUF(c *Config) []gguf.KV {
	a := c.Arch
	// llama.cpp requires the key (0 = no window, as Phi-4 writes).
	kv := []gguf.KV{{Key: a + ".attention.sliding_window", Value: gguf.U32(uint32(c.SlidingWindow))}}
	if r := c.LongRope; r != nil {
		kv = append(kv, gguf.KV{Key: a + ".rope.scaling.original_context_length", Value: gguf.U32(uint32(r.OrigCtx))},
			gguf.KV{Key: a + ".rope.scaling.attn_factor", Value: gguf.F32(float32(r.AttnFactor))})
	}
	return kv
}

func phi3FromHF(hc *hfdir.Config, c *Config) error {
	if v, ok := hc.Raw["sliding_window"]; ok && v != nil {
		w, err := jsonInt(v)
		if err != nil || w < 0 {
			return fmt.Errorf("sliding_window %v: want a non-negative integer", v)
		}
		c.SlidingWindow = w
	}
	rs := hc.RopeScaling
	if rs == nil || rs.Type == "default" {
		return nil
	}
	if rs.Type != "longrope" && rs.Type != "su" {
		return fmt.Errorf("rope_scaling type %q is not supported for phi3 (longrope, su)", rs.Type)
	}
	r := &LongRope{OrigCtx: c.CtxLen}
	if v, ok := hc.Raw["original_max_position_embeddings"]; ok {
		o, err := jsonInt(v)
		if err != nil || o <= 0 {
			return fmt.Errorf("original_max_position_embeddings %v: want a positive integer", v)
		}
		r.OrigCtx = o
	}
	for _, x := range []struct {
		key string
		dst *[]float32
	}{{"long_factor", &r.Long}, {"short_factor", &r.Short}} {
		list, ok := rs.Raw[x.key].([]any)
		if !ok {
			return fmt.Errorf("rope_scaling.%s missing or not a list", x.key)
		}
		for i, e := range list {
			f, err := jsonFloat(e)
			if err != nil {
				return fmt.Errorf("rope_scaling.%s[%d]: %v", x.key, i, err)
			}
			*x.dst = append(*x.dst, float32(f))
		}
	}
	r.AttnFactor = LongRopeAttnFactor(c.CtxLen, r.OrigCtx)
	if v, ok := rs.Raw["attention_factor"]; ok && v != nil {
		f, err := jsonFloat(v)
		if err != nil || !(f > 0) {
			return fmt.Errorf("rope_scaling.attention_factor %v: want a positive number", v)
		}
		r.AttnFactor = float64(float32(f))
	}
	c.LongRope = r
	return checkLongRope(c)
}

func phi3ToHF(c *Config, hc *hfdir.Config) {
	if c.SlidingWindow > 0 {
		hc.Raw["sliding_window"] = c.SlidingWindow
	} else {
		hc.Raw["sliding_window"] = nil
	}
	r := c.LongRope
	if r == nil {
		return
	}
	hc.Raw["original_max_position_embeddings"] = r.OrigCtx
	f64 := func(v []float32) []any {
		out := make([]any, len(v))
		for i, f := range v {
			out[i] = json.Number(fmt.Sprint(f))
		}
		return out
	}
	// "type", not "rope_type": transformers' Phi3Config wants exactly type, long_factor, short_factor.
	hc.RopeScaling = &hfdir.RopeScaling{Type: "longrope",
		Raw: map[string]any{"type": "longrope", "long_factor": f64(r.Long), "short_factor": f64(r.Short)}}
}

// phi3ConfigTensors gives the LongRoPE divisors as the GGUF tensors llama.cpp reads.
func phi3ConfigTensors(c *Config) []*tensor.Tensor {
	if c.LongRope == nil {
		return nil
	}
	return []*tensor.Tensor{f32Tensor(RopeFactorsLong, c.LongRope.Long), f32Tensor(RopeFactorsShort, c.LongRope.Short)}
}

func jsonInt(v any) (int, error) {
	switch x := v.(type) {
	case json.Number:
		i, err := x.Int64()
		return int(i), err
	case int:
		return x, nil
	case float64:
		if x == math.Trunc(x) {
			return int(x), nil
		}
	}
	return 0, fmt.Errorf("not an integer: %v", v)
}

func jsonFloat(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	}
	return 0, fmt.Errorf("not a number: %v", v)
}
