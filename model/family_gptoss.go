// This file registers gpt-oss (OpenAI's gpt-oss; Hugging Face's gpt_oss, GptOssForCausalLM):
// pre-norm blocks whose attention has q/k/v/output biases, a learned sink logit per head in
// the softmax, and a 128-token sliding window on the even layers (0, 2, ...; full attention on
// the odd ones), rotate-half RoPE with YaRN scaling, and a mixture of experts with a biased
// router (top-k of the logits, the k chosen softmaxed: the moe op's softmax with norm=1),
// biased experts and the clamped swiglu_oai activation (alpha 1.702, limit 7). The builder
// is gptoss_graph.go.
//
// GGUF, as later llama.cpp names it (gpt-oss is newer than llama.cpp c392e5094): arch
// "gpt-oss"; blk.N.attn_norm, attn_q/k/v/output (.weight, .bias), attn_sinks.weight,
// post_attention_norm (the feed-forward's pre-norm), ffn_gate_inp (.weight, .bias),
// ffn_gate_exps/ffn_up_exps/ffn_down_exps (.weight [E,F,D]/[E,D,F], .bias [E,F]/[E,D]);
// gpt-oss.expert_count, expert_used_count, expert_feed_forward_length,
// attention.sliding_window, rope.scaling.type yarn, .factor, .original_context_length.
//
// Hugging Face (transformers' GptOss): mlp.router.weight/bias, self_attn.sinks, and the
// experts fused: mlp.experts.gate_up_proj [E, D, 2F] (x·W: transposed against GGUF, gate in
// the even and up in the odd columns) with gate_up_proj_bias [E, 2F], down_proj [E, F, D]
// with down_proj_bias [E, D]. LoadHF transposes and de-interleaves them (gptossFromHFTensor,
// Family.HFInterleaved), WriteHF puts them back. The MXFP4 _blocks/_scales form of the
// released checkpoints is not read (dequantize to BF16/F32 first).
//
// YaRN: llmcloud's rope is ggml's (correction dims floored and ceiled); transformers'
// gpt-oss config says truncate: false (no rounding), so its angles differ slightly from
// llama.cpp's and llmcloud's in the ramp's two edge pairs.
package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

const (
	gptossArch   = "gpt-oss"
	gptossWindow = 128               // gpt-oss's sliding window where a file gives none
	gptossLimit  = 7.0               // swiglu_limit: llama.cpp's constant
	gptossGateUp = "hf_gate_up_exps" // the HF fused tensor's GGUF-side name, llmcloud's own (LoadHF splits it)
)

func init() {
	Register(&Family{
		Arch: gptossArch, HFModelType: "gpt_oss", HFArchitecture: "GptOssForCausalLM",
		RopeTheta: 150000, NormEps: 1e-5,
		Experts: true, ExpertsOnly: true,
		Fix:      gptossFix,
		FromGGUF: gptossFromGGUF, ToGGUF: gptossToGGUF,
		FromHF: gptossFromHF, ToHF: gptossToHF,
		Shapes: gptossShapes, Build: buildGptOss, Names: gptossNames,
		FromHFTensor: gptossFromHFTensor, ToHFTensor: gptossToHFTensor,
		HFMerge: gptossMergeMXFP4,
		HFInterleaved: map[string][2]string{
			gptossGateUp + ".weight": {"ffn_gate_exps.weight", "ffn_up_exps.weight"},
			gptossGateUp + ".bias":   {"ffn_gate_exps.bias", "ffn_up_exps.bias"},
		},
		HFShapes: gptossHFShapes,
	})
}

// gptossFix: rotate-half RoPE, q/k/v biases, the even layers windowed (pattern 2), the
// window's default, softmax over the chosen experts (norm), no shared expert.
func gptossFix(c *Config) {
	c.RopeNeoX, c.QKVBias, c.ExpertsNorm, c.SharedFFN = true, true, true, 0
	c.SlidingPattern = 2
	if c.SlidingWindow == 0 {
		c.SlidingWindow = gptossWindow
	}
}

// checkGptOss checks what the builder relies on beyond Validate's shared checks.
func checkGptOss(c *Config) error {
	if c.SlidingPattern != 2 || c.SlidingWindow <= 0 {
		return fmt.Errorf("model: gpt-oss sliding_window = %d (pattern %d): want a window on the even layers", c.SlidingWindow, c.SlidingPattern)
	}
	if c.RopeScaling != nil || c.LongRope != nil || c.RopeLinear != 0 {
		return fmt.Errorf("model: gpt-oss rope_scaling: only yarn is supported")
	}
	if c.Yarn != nil && c.Yarn.LogMul != 0 {
		return fmt.Errorf("model: gpt-oss rope.scaling.yarn_log_multiplier = %v: gpt-oss has none", c.Yarn.LogMul)
	}
	return nil
}

func gptossFromGGUF(f *gguf.File, c *Config) error {
	a := c.Arch + "."
	if _, ok := f.Get(a + "expert_feed_forward_length"); ok {
		v, ok := f.Uint(a + "expert_feed_forward_length")
		if !ok || v == 0 || v > MaxFFN {
			return fmt.Errorf("%sexpert_feed_forward_length is not a width in [1, %d]", a, MaxFFN)
		}
		c.ExpertFFN = int(v)
	}
	if v, ok := f.Get(a + "attention.sliding_window"); ok {
		w, ok := f.Uint(a + "attention.sliding_window")
		if !ok || w == 0 || w > 1<<31 {
			return fmt.Errorf("%sattention.sliding_window = %v: want a positive window", a, v.V)
		}
		c.SlidingWindow = int(w)
	}
	if err := deepseek3FromGGUF(f, c); err != nil { // the YaRN keys (no routing keys in gpt-oss files)
		return err
	}
	return checkGptOss(c)
}

func gptossToGGUF(c *Config) []gguf.KV {
	a := c.Arch + "."
	kv := []gguf.KV{
		{Key: a + "expert_feed_forward_length", Value: gguf.U32(uint32(c.ExpertWidth()))},
		{Key: a + "attention.sliding_window", Value: gguf.U32(uint32(c.SlidingWindow))},
		{Key: a + "attention.value_length", Value: gguf.U32(uint32(c.HeadDim))},
	}
	if y := c.Yarn; y != nil {
		kv = append(kv, gguf.KV{Key: a + "rope.scaling.type", Value: gguf.Str("yarn")},
			gguf.KV{Key: a + "rope.scaling.factor", Value: gguf.F32(float32(y.Factor))},
			gguf.KV{Key: a + "rope.scaling.original_context_length", Value: gguf.U32(uint32(y.OrigCtx))})
		if fast, slow := y.Betas(); fast != 32 || slow != 1 {
			kv = append(kv, gguf.KV{Key: a + "rope.scaling.yarn_beta_fast", Value: gguf.F32(float32(fast))},
				gguf.KV{Key: a + "rope.scaling.yarn_beta_slow", Value: gguf.F32(float32(slow))})
		}
	}
	return kv
}

// gptossFromHF reads the window, layer_types (even layers sliding), swiglu_limit (7 only),
// attention_bias (true only), the experts' width (intermediate_size) and rope_scaling yarn.
func gptossFromHF(hc *hfdir.Config, c *Config) error {
	num := func(key string) (float64, bool, error) {
		v, ok := hc.Raw[key]
		if !ok || v == nil {
			return 0, false, nil
		}
		n, isNum := v.(json.Number)
		if !isNum {
			return 0, false, fmt.Errorf("config.json %s = %v is not a number", key, v)
		}
		f, err := n.Float64()
		if err != nil {
			return 0, false, fmt.Errorf("config.json %s = %v is not a number", key, v)
		}
		return f, true, nil
	}
	c.ExpertFFN = c.FFN
	if w, ok, err := num("sliding_window"); err != nil {
		return err
	} else if ok {
		if w != math.Trunc(w) || w < 1 || w > 1<<31 {
			return fmt.Errorf("config.json sliding_window = %v: want a positive window", w)
		}
		c.SlidingWindow = int(w)
	}
	if v, ok := hc.Raw["layer_types"]; ok && v != nil {
		l, isList := v.([]any)
		if !isList || len(l) != c.Layers {
			return fmt.Errorf("config.json layer_types = %v: want %d entries (num_hidden_layers)", v, c.Layers)
		}
		for i, t := range l {
			want := "full_attention"
			if i%2 == 0 {
				want = "sliding_attention"
			}
			if t != want {
				return fmt.Errorf("config.json layer_types[%d] = %v: only sliding_attention on the even layers and full_attention on the odd ones is supported", i, t)
			}
		}
	}
	if lim, ok, err := num("swiglu_limit"); err != nil {
		return err
	} else if ok && lim != gptossLimit {
		return fmt.Errorf("config.json swiglu_limit = %v: only %v is supported (llama.cpp's)", lim, gptossLimit)
	}
	if v, ok := hc.Raw["attention_bias"]; ok && v != true {
		return fmt.Errorf("config.json attention_bias = %v: gpt-oss's attention has biases", v)
	}
	c.HFMXFP4 = false
	if q, ok := hc.Raw["quantization_config"]; ok && q != nil {
		m, isMap := q.(map[string]any)
		if !isMap || m["quant_method"] != "mxfp4" {
			return fmt.Errorf("config.json quantization_config = %v: only quant_method mxfp4 is supported", q)
		}
		if c.Dim%32 != 0 || c.ExpertWidth()%32 != 0 {
			return fmt.Errorf("config.json quantization_config mxfp4: hidden_size %d and intermediate_size %d must be multiples of 32", c.Dim, c.ExpertWidth())
		}
		c.HFMXFP4 = true
	}
	if act, ok := hc.Raw["hidden_act"]; ok && act != nil && act != "silu" {
		return fmt.Errorf("config.json hidden_act = %v: gpt-oss's experts use silu (swiglu_oai)", act)
	}
	if err := gptossYarnFromHF(hc.RopeScaling, c); err != nil {
		return err
	}
	return checkGptOss(c)
}

// gptossYarnFromHF reads rope_scaling (yarn or none).
func gptossYarnFromHF(rs *hfdir.RopeScaling, c *Config) error {
	if rs == nil || rs.Type == "default" {
		return nil
	}
	if rs.Type != "yarn" {
		return fmt.Errorf("config.json rope_scaling type %q: gpt-oss takes yarn", rs.Type)
	}
	y := &Yarn{Yarn: kernels.Yarn{Factor: rs.Factor, OrigCtx: rs.OriginalMaxPositionEmbeddings}}
	if y.OrigCtx == 0 {
		y.OrigCtx = 4096 // llama.cpp's converter's default for gpt-oss
	}
	for _, k := range []struct {
		key string
		dst *float64
	}{{"beta_fast", &y.BetaFast}, {"beta_slow", &y.BetaSlow}} {
		switch v := rs.Raw[k.key].(type) {
		case nil:
		case json.Number:
			f, err := v.Float64()
			if err != nil {
				return fmt.Errorf("config.json rope_scaling.%s = %v is not a number", k.key, v)
			}
			*k.dst = f
		case float64:
			*k.dst = v
		default:
			return fmt.Errorf("config.json rope_scaling.%s = %v is not a number", k.key, v)
		}
	}
	c.Yarn = y
	return nil
}

func gptossToHF(c *Config, hc *hfdir.Config) {
	hc.HeadDim, hc.AttentionBias = c.HeadDim, true
	hc.IntermediateSize = c.ExpertWidth()
	types := make([]string, c.Layers)
	for l := range types {
		types[l] = "full_attention"
		if c.IsLocalLayer(l) {
			types[l] = "sliding_attention"
		}
	}
	hc.Raw["num_local_experts"], hc.Raw["num_experts_per_tok"] = c.Experts, c.ExpertsUsed
	hc.Raw["sliding_window"], hc.Raw["layer_types"] = c.SlidingWindow, types
	hc.Raw["swiglu_limit"], hc.Raw["attention_bias"] = gptossLimit, true
	hc.RopeScaling = nil
	if y := c.Yarn; y != nil {
		fast, slow := y.Betas()
		hc.RopeScaling = &hfdir.RopeScaling{Type: "yarn", Factor: y.Factor, OriginalMaxPositionEmbeddings: y.OrigCtx,
			Raw: map[string]any{"beta_fast": fast, "beta_slow": slow, "truncate": false}}
	}
}

var gptossNames = NameMap{
	Global: map[string]string{
		"model.embed_tokens.weight": "token_embd.weight",
		"model.norm.weight":         "output_norm.weight",
		"lm_head.weight":            "output.weight",
	},
	BlockPrefix: "model.layers.",
	Block: map[string]string{
		"input_layernorm.weight":          "attn_norm.weight",
		"self_attn.q_proj.weight":         "attn_q.weight",
		"self_attn.q_proj.bias":           "attn_q.bias",
		"self_attn.k_proj.weight":         "attn_k.weight",
		"self_attn.k_proj.bias":           "attn_k.bias",
		"self_attn.v_proj.weight":         "attn_v.weight",
		"self_attn.v_proj.bias":           "attn_v.bias",
		"self_attn.o_proj.weight":         "attn_output.weight",
		"self_attn.o_proj.bias":           "attn_output.bias",
		"self_attn.sinks":                 "attn_sinks.weight",
		"post_attention_layernorm.weight": "post_attention_norm.weight",
		"mlp.router.weight":               "ffn_gate_inp.weight",
		"mlp.router.bias":                 "ffn_gate_inp.bias",
		"mlp.experts.gate_up_proj":        gptossGateUp + ".weight",
		"mlp.experts.gate_up_proj_bias":   gptossGateUp + ".bias",
		"mlp.experts.down_proj":           "ffn_down_exps.weight",
		"mlp.experts.down_proj_bias":      "ffn_down_exps.bias",
		// MXFP4 (quantization_config mxfp4; gptoss_mxfp4.go)
		"mlp.experts.gate_up_proj_blocks": gptossGateUp + ".blocks",
		"mlp.experts.gate_up_proj_scales": gptossGateUp + ".scales",
		"mlp.experts.down_proj_blocks":    "ffn_down_exps.blocks",
		"mlp.experts.down_proj_scales":    "ffn_down_exps.scales",
	},
	Skip: []string{"self_attn.rotary_emb.inv_freq"},
}

// gptossShapes lists gpt-oss's tensors by llama.cpp's names.
func gptossShapes(c *Config) map[string][]int {
	e, f, d := c.Experts, c.ExpertWidth(), c.Dim
	s := map[string][]int{
		"token_embd.weight":  {c.Vocab, d},
		"output_norm.weight": {d},
	}
	if !c.Tied {
		s["output.weight"] = []int{c.Vocab, d}
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		for name, shape := range map[string][]int{
			"attn_norm.weight": {d}, "attn_q.weight": {c.QDim(), d}, "attn_q.bias": {c.QDim()},
			"attn_k.weight": {c.KVDim(), d}, "attn_k.bias": {c.KVDim()},
			"attn_v.weight": {c.KVDim(), d}, "attn_v.bias": {c.KVDim()},
			"attn_output.weight": {d, c.QDim()}, "attn_output.bias": {d}, "attn_sinks.weight": {c.Heads},
			"post_attention_norm.weight": {d},
			"ffn_gate_inp.weight":        {e, d}, "ffn_gate_inp.bias": {e},
			"ffn_gate_exps.weight": {e, f, d}, "ffn_gate_exps.bias": {e, f},
			"ffn_up_exps.weight": {e, f, d}, "ffn_up_exps.bias": {e, f},
			"ffn_down_exps.weight": {e, d, f}, "ffn_down_exps.bias": {e, d},
		} {
			s[p+name] = shape
		}
	}
	return s
}

// gptossHFShapes: Shapes as a Hugging Face checkpoint holds them under the NameMap's names:
// gate and up fused and transposed ([E, D, 2F], bias [E, 2F]), down transposed ([E, F, D]).
func gptossHFShapes(c *Config) map[string][]int {
	s := gptossShapes(c)
	e, f, d := c.Experts, c.ExpertWidth(), c.Dim
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		for _, n := range []string{"ffn_gate_exps.weight", "ffn_gate_exps.bias", "ffn_up_exps.weight", "ffn_up_exps.bias"} {
			delete(s, p+n)
		}
		s[p+gptossGateUp+".weight"] = []int{e, d, 2 * f}
		s[p+gptossGateUp+".bias"] = []int{e, 2 * f}
		s[p+"ffn_down_exps.weight"] = []int{e, f, d}
	}
	if c.HFMXFP4 {
		gptossMXFP4Shapes(c, s)
	}
	return s
}

// gptossFromHFTensor swaps the last two axes of the experts' fused gate/up and down weights
// (HF x·W against GGUF's W·x); MXFP4 ones (from _blocks/_scales) are [out, in] already.
func gptossFromHFTensor(c *Config, name string) TensorFunc {
	if !hasBlockSuffix(name, gptossGateUp+".weight") && !hasBlockSuffix(name, "ffn_down_exps.weight") {
		return nil
	}
	return func(t *tensor.Tensor) (*tensor.Tensor, error) {
		if t.Type == tensor.MXFP4 {
			return t, nil
		}
		return SwapLastAxes(t)
	}
}

// gptossToHFTensor swaps the last two axes back, dequantizing MXFP4 experts (the float form).
func gptossToHFTensor(c *Config, name string) TensorFunc {
	if !hasBlockSuffix(name, gptossGateUp+".weight") && !hasBlockSuffix(name, "ffn_down_exps.weight") {
		return nil
	}
	return func(t *tensor.Tensor) (*tensor.Tensor, error) {
		if t.Type.Quantized() { // MXFP4 experts written to a float checkpoint
			f, err := tensor.Convert(t, tensor.F32)
			if err != nil {
				return nil, err
			}
			t = f
		}
		return SwapLastAxes(t)
	}
}

// hasBlockSuffix reports whether name is blk.N.suffix.
func hasBlockSuffix(name, suffix string) bool {
	var l int
	var rest string
	n, _ := fmt.Sscanf(name, "blk.%d.%s", &l, &rest)
	return n == 2 && rest == suffix
}
