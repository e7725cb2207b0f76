// This file registers deepseek2 (DeepSeek-V2, V2-Lite, V2.5; HF deepseek_v2): multi-head
// latent attention (MLA) and a mixture of experts after DenseLead dense blocks.
//
// Attention: q = h·attn_qᵀ, or through the low-rank pair h·attn_q_aᵀ, RMS-normed by
// attn_q_a_norm, ·attn_q_bᵀ (QLoraRank > 0); per head q is nope = HeadDim-RopeDim plain then
// RopeDim rotated values. h·attn_kv_a_mqaᵀ gives the latent (KVLoraRank, RMS-normed by
// attn_kv_a_norm) and one RoPE key shared by the heads (RopeDim); attn_kv_b takes the latent to
// each head's nope key values and VHeadDim values. The graph op mla_attention caches only the
// latent and the RoPE key. Feed-forward: SwiGLU in the first DenseLead blocks, then the moe op
// (softmax or sigmoid scores, top-k weights optionally renormalised, times ExpertsScale) plus
// the shared experts (expert_shared_count of them, one SwiGLU of SharedFFN = count·ExpertFFN).
//
// llama.cpp (c392e5094) reads the same tensors and keys; it takes a 27-block model to be
// V2-Lite (attn_q, no q_lora_rank) and any other block count to have q_lora_rank, and it has
// neither grouped top-k nor an absorbed cache (it caches full keys and values).
package model

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
)

func init() {
	Register(&Family{
		Arch: "deepseek2", HFModelType: "deepseek_v2", HFArchitecture: "DeepseekV2ForCausalLM",
		HFAltModelType: "deepseek_v3", HFAltArchitecture: "DeepseekV3ForCausalLM", HFAltWhen: deepseekV3,
		RopeTheta: 10000, NormEps: 1e-6,
		Experts: true, ExpertsOnly: true,
		Fix:      deepseek2Fix,
		FromGGUF: deepseek2FromGGUF, ToGGUF: deepseek2ToGGUF,
		FromHF: deepseek2FromHF, ToHF: deepseek2ToHF,
		Shapes: deepseek2Shapes, Build: buildDeepseek2, Names: deepseek2Names(),
	})
}

func deepseek2Names() NameMap {
	block := maps.Clone(llamaNames.Block)
	for _, k := range []string{"self_attn.k_proj.weight", "self_attn.v_proj.weight", "block_sparse_moe.gate.weight"} {
		delete(block, k)
	}
	for hf, gg := range map[string]string{
		"self_attn.q_a_proj.weight":           "attn_q_a.weight",
		"self_attn.q_a_layernorm.weight":      "attn_q_a_norm.weight",
		"self_attn.q_b_proj.weight":           "attn_q_b.weight",
		"self_attn.kv_a_proj_with_mqa.weight": "attn_kv_a_mqa.weight",
		"self_attn.kv_a_layernorm.weight":     "attn_kv_a_norm.weight",
		"self_attn.kv_b_proj.weight":          "attn_kv_b.weight",
		"mlp.gate.weight":                     "ffn_gate_inp.weight",
		"mlp.shared_experts.gate_proj.weight": "ffn_gate_shexp.weight",
		"mlp.shared_experts.up_proj.weight":   "ffn_up_shexp.weight",
		"mlp.shared_experts.down_proj.weight": "ffn_down_shexp.weight",
		"mlp.gate.e_score_correction_bias":    "exp_probs_b.bias",
	} {
		block[hf] = gg
	}
	return NameMap{Global: llamaNames.Global, BlockPrefix: llamaNames.BlockPrefix, Block: block, Skip: llamaNames.Skip,
		Experts: map[string]string{
			"mlp.experts.*.gate_proj.weight": "ffn_gate_exps.weight",
			"mlp.experts.*.up_proj.weight":   "ffn_up_exps.weight",
			"mlp.experts.*.down_proj.weight": "ffn_down_exps.weight",
		}}
}

// deepseek2Fix: one KV head per query head (MLA's heads all read the one latent), adjacent-pair
// RoPE, and synth's defaults where nothing is given: a third of the head rotated, v heads as
// wide as the non-rotated part, a latent of 4 such heads, one shared expert, one dense block.
func deepseek2Fix(c *Config) {
	c.KVHeads, c.RopeNeoX, c.QKVBias, c.QKNorm = c.Heads, false, false, false
	if c.RopeDim == 0 {
		c.RopeDim = max(2, c.HeadDim/3&^1)
	}
	if c.VHeadDim == 0 {
		c.VHeadDim = c.HeadDim - c.RopeDim
	}
	if c.KVLoraRank == 0 {
		c.KVLoraRank = 4 * (c.HeadDim - c.RopeDim)
	}
	if c.ExpertFFN == 0 && c.ExpertsUsed > 0 {
		c.ExpertFFN = max(1, c.FFN/c.ExpertsUsed)
	}
	if c.SharedFFN == 0 {
		c.SharedFFN = c.ExpertWidth()
	}
	if c.ExpertsScale == 0 {
		c.ExpertsScale = 1
	}
}

// checkMLA checks the MLA and DeepSeek routing fields (KVLoraRank > 0 or any of them set).
func (c *Config) checkMLA() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"attention.q_lora_rank", c.QLoraRank}, {"attention.kv_lora_rank", c.KVLoraRank}, {"rope.dimension_count", c.RopeDim},
		{"attention.value_length", c.VHeadDim}, {"leading_dense_block_count", c.DenseLead}} {
		if f.v < 0 || f.v > MaxDim {
			return fmt.Errorf("model: config %s = %d out of range [0, %d]", f.name, f.v, MaxDim)
		}
	}
	if !(c.ExpertsScale >= 0) || c.ExpertsScale > 1e6 {
		return fmt.Errorf("model: config expert_weights_scale = %v out of range [0, 1e6]", c.ExpertsScale)
	}
	if c.KVLoraRank == 0 {
		if c.Arch == "deepseek2" {
			return fmt.Errorf("model: config attention.kv_lora_rank = 0: deepseek2 attention needs the latent's width")
		}
		return nil
	}
	switch {
	case c.RopeDim <= 0 || c.RopeDim%2 != 0 || c.RopeDim >= c.HeadDim:
		return fmt.Errorf("model: config rope.dimension_count = %d: want even, positive and below the key length %d", c.RopeDim, c.HeadDim)
	case c.VHeadDim <= 0:
		return fmt.Errorf("model: config attention.value_length = %d, must be positive", c.VHeadDim)
	case c.KVHeads != c.Heads:
		return fmt.Errorf("model: config attention.head_count_kv = %d: MLA has one per head (%d)", c.KVHeads, c.Heads)
	case c.DenseLead > c.Layers:
		return fmt.Errorf("model: config leading_dense_block_count = %d, above the %d blocks", c.DenseLead, c.Layers)
	case c.SharedFFN > 0 && c.SharedFFN%c.ExpertWidth() != 0:
		return fmt.Errorf("model: config shared experts' width %d is not a multiple of expert_feed_forward_length %d", c.SharedFFN, c.ExpertWidth())
	case c.Heads*(c.HeadDim-c.RopeDim+c.VHeadDim) > MaxDim:
		return fmt.Errorf("model: config attention.value_length = %d: heads x (nope + v) above the limit %d", c.VHeadDim, MaxDim)
	}
	return nil
}

// deepseek2 GGUF keys beyond the shared ones (llama.cpp's names).
func deepseek2FromGGUF(f *gguf.File, c *Config) error {
	a := c.Arch + "."
	read := func(key string, dst *int, required bool) error {
		if _, ok := f.Get(a + key); !ok {
			if required {
				return fmt.Errorf("%s%s missing", a, key)
			}
			return nil
		}
		v, ok := f.Uint(a + key)
		if !ok || v > MaxFFN {
			return fmt.Errorf("%s%s is not a count in [0, %d]", a, key, MaxFFN)
		}
		*dst = int(v)
		return nil
	}
	shared := 1
	for _, k := range []struct {
		key      string
		dst      *int
		required bool
	}{{"attention.q_lora_rank", &c.QLoraRank, false}, {"attention.kv_lora_rank", &c.KVLoraRank, true},
		{"rope.dimension_count", &c.RopeDim, true}, {"attention.value_length", &c.VHeadDim, true},
		{"leading_dense_block_count", &c.DenseLead, false}, {"expert_feed_forward_length", &c.ExpertFFN, true},
		{"expert_shared_count", &shared, false}} {
		if err := read(k.key, k.dst, k.required); err != nil {
			return err
		}
	}
	c.SharedFFN = shared * c.ExpertWidth()
	if v, ok := f.Get(a + "expert_weights_scale"); ok {
		s, isF := f.Float(a + "expert_weights_scale")
		if !isF {
			return fmt.Errorf("%sexpert_weights_scale = %v is not a number", a, v)
		}
		c.ExpertsScale = s
	}
	if _, ok := f.Get(a + "expert_weights_norm"); ok {
		v, isB := f.Bool(a + "expert_weights_norm")
		if !isB {
			return fmt.Errorf("%sexpert_weights_norm is not a bool", a)
		}
		c.ExpertsNorm = v
	}
	if _, ok := f.Get(a + "expert_gating_func"); ok {
		switch v, _ := f.Uint(a + "expert_gating_func"); v {
		case 0, 1: // none (V2 files before the key) or softmax
		case 2:
			c.ExpertsSigmoid = true
		default:
			return fmt.Errorf("%sexpert_gating_func = %d: want 1 (softmax) or 2 (sigmoid)", a, v)
		}
	}
	return deepseek3FromGGUF(f, c)
}

func deepseek2ToGGUF(c *Config) []gguf.KV {
	a := c.Arch + "."
	kv := []gguf.KV{
		{Key: a + "attention.key_length", Value: gguf.U32(uint32(c.HeadDim))},
		{Key: a + "attention.value_length", Value: gguf.U32(uint32(c.VHeadDim))},
		{Key: a + "rope.dimension_count", Value: gguf.U32(uint32(c.RopeDim))},
		{Key: a + "leading_dense_block_count", Value: gguf.U32(uint32(c.DenseLead))},
	}
	if c.QLoraRank > 0 {
		kv = append(kv, gguf.KV{Key: a + "attention.q_lora_rank", Value: gguf.U32(uint32(c.QLoraRank))})
	}
	gating := uint32(1)
	if c.ExpertsSigmoid {
		gating = 2
	}
	kv = append(kv,
		gguf.KV{Key: a + "attention.kv_lora_rank", Value: gguf.U32(uint32(c.KVLoraRank))},
		gguf.KV{Key: a + "expert_feed_forward_length", Value: gguf.U32(uint32(c.ExpertWidth()))},
		gguf.KV{Key: a + "expert_shared_count", Value: gguf.U32(uint32(c.SharedFFN / c.ExpertWidth()))},
		gguf.KV{Key: a + "expert_weights_scale", Value: gguf.F32(float32(c.ExpertsScale))},
		gguf.KV{Key: a + "expert_weights_norm", Value: gguf.Bool(c.ExpertsNorm)},
		gguf.KV{Key: a + "expert_gating_func", Value: gguf.U32(gating)},
	)
	return append(kv, deepseek3ToGGUF(c)...)
}

// deepseek2FromHF reads config.json's MLA and routing fields (deepseek_v2 and deepseek_v3);
// YaRN and V3's routing: deepseek3.go.
func deepseek2FromHF(hc *hfdir.Config, c *Config) error {
	num := func(key string) (float64, bool, error) {
		v, ok := hc.Raw[key]
		if !ok || v == nil {
			return 0, false, nil
		}
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			return f, err == nil, err
		case float64:
			return x, true, nil
		}
		return 0, false, fmt.Errorf("config.json %s = %v is not a number", key, v)
	}
	var nope, shared int
	for _, k := range []struct {
		key string
		dst *int
	}{{"q_lora_rank", &c.QLoraRank}, {"kv_lora_rank", &c.KVLoraRank}, {"qk_rope_head_dim", &c.RopeDim},
		{"qk_nope_head_dim", &nope}, {"v_head_dim", &c.VHeadDim}, {"first_k_dense_replace", &c.DenseLead},
		{"moe_intermediate_size", &c.ExpertFFN}, {"n_shared_experts", &shared}, {"n_routed_experts", &c.Experts}} {
		v, ok, err := num(k.key)
		if err != nil {
			return err
		}
		if ok {
			if v < 0 || v > MaxFFN || v != float64(int(v)) {
				return fmt.Errorf("config.json %s = %v is not a count in [0, %d]", k.key, v, MaxFFN)
			}
			*k.dst = int(v)
		}
	}
	if nope <= 0 || c.RopeDim <= 0 {
		return fmt.Errorf("config.json qk_nope_head_dim = %d, qk_rope_head_dim = %d: both must be positive", nope, c.RopeDim)
	}
	c.HeadDim = nope + c.RopeDim
	c.SharedFFN = shared * c.ExpertWidth()
	if v, ok, err := num("routed_scaling_factor"); err != nil {
		return err
	} else if ok {
		c.ExpertsScale = v
	}
	c.ExpertsNorm, _ = hc.Raw["norm_topk_prob"].(bool)
	switch s, _ := hc.Raw["scoring_func"].(string); s {
	case "", "softmax":
	case "sigmoid":
		c.ExpertsSigmoid = true
	default:
		return fmt.Errorf("config.json scoring_func = %q: want softmax or sigmoid", s)
	}
	if f, ok, _ := num("moe_layer_freq"); ok && f != 1 {
		return fmt.Errorf("config.json moe_layer_freq = %v: only every block after the dense ones a mixture of experts (1) is supported", f)
	}
	return deepseek3FromHF(hc, c, num)
}

func deepseek2ToHF(c *Config, hc *hfdir.Config) {
	if hc.Raw == nil {
		hc.Raw = map[string]any{}
	}
	hc.HeadDim = 0
	var q any
	if c.QLoraRank > 0 {
		q = c.QLoraRank
	}
	scoring := "softmax"
	if c.ExpertsSigmoid {
		scoring = "sigmoid"
	}
	for k, v := range map[string]any{
		"q_lora_rank": q, "kv_lora_rank": c.KVLoraRank, "qk_rope_head_dim": c.RopeDim,
		"qk_nope_head_dim": c.HeadDim - c.RopeDim, "v_head_dim": c.VHeadDim, "first_k_dense_replace": c.DenseLead,
		"moe_intermediate_size": c.ExpertWidth(), "n_shared_experts": c.SharedFFN / c.ExpertWidth(),
		"n_routed_experts": c.Experts, "num_experts_per_tok": c.ExpertsUsed, "routed_scaling_factor": c.ExpertsScale,
		"norm_topk_prob": c.ExpertsNorm, "scoring_func": scoring, "moe_layer_freq": 1,
	} {
		hc.Raw[k] = v
	}
	deepseek3ToHF(c, hc)
}

// deepseek2Shapes: every tensor by GGUF name, as llama.cpp's deepseek2 loader wants them.
func deepseek2Shapes(c *Config) map[string][]int {
	s := map[string][]int{"token_embd.weight": {c.Vocab, c.Dim}, "output_norm.weight": {c.Dim}}
	if !c.Tied {
		s["output.weight"] = []int{c.Vocab, c.Dim}
	}
	nope, f := c.HeadDim-c.RopeDim, c.ExpertWidth()
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		s[p+"attn_norm.weight"] = []int{c.Dim}
		if c.QLoraRank > 0 {
			s[p+"attn_q_a.weight"] = []int{c.QLoraRank, c.Dim}
			s[p+"attn_q_a_norm.weight"] = []int{c.QLoraRank}
			s[p+"attn_q_b.weight"] = []int{c.QDim(), c.QLoraRank}
		} else {
			s[p+"attn_q.weight"] = []int{c.QDim(), c.Dim}
		}
		s[p+"attn_kv_a_mqa.weight"] = []int{c.KVLoraRank + c.RopeDim, c.Dim}
		s[p+"attn_kv_a_norm.weight"] = []int{c.KVLoraRank}
		s[p+"attn_kv_b.weight"] = []int{c.Heads * (nope + c.VHeadDim), c.KVLoraRank}
		s[p+"attn_output.weight"] = []int{c.Dim, c.Heads * c.VHeadDim}
		s[p+"ffn_norm.weight"] = []int{c.Dim}
		if l < c.DenseLead {
			s[p+"ffn_gate.weight"] = []int{c.FFN, c.Dim}
			s[p+"ffn_up.weight"] = []int{c.FFN, c.Dim}
			s[p+"ffn_down.weight"] = []int{c.Dim, c.FFN}
			continue
		}
		s[p+"ffn_gate_inp.weight"] = []int{c.Experts, c.Dim}
		s[p+"ffn_gate_exps.weight"] = []int{c.Experts, f, c.Dim}
		s[p+"ffn_up_exps.weight"] = []int{c.Experts, f, c.Dim}
		s[p+"ffn_down_exps.weight"] = []int{c.Experts, c.Dim, f}
		if c.ExpertsBias {
			s[p+"exp_probs_b.bias"] = []int{c.Experts}
		}
		if c.SharedFFN > 0 {
			s[p+"ffn_gate_shexp.weight"] = []int{c.SharedFFN, c.Dim}
			s[p+"ffn_up_shexp.weight"] = []int{c.SharedFFN, c.Dim}
			s[p+"ffn_down_shexp.weight"] = []int{c.Dim, c.SharedFFN}
		}
	}
	return s
}
