// This file registers qwen2moe (Qwen1.5-MoE, Qwen2-MoE): the qwen2 block (q/k/v biases, NeoX
// RoPE) whose feed-forward is a mixture of experts, softmax-routed without renormalising the
// top-k weights, plus a shared expert every token runs, scaled by the sigmoid of its own gate
// (graph op moe with the shared-expert arguments). Built by the Llama family's builder.
package model

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
)

func init() {
	block := maps.Clone(llamaNames.Block)
	for _, k := range []string{"mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "block_sparse_moe.gate.weight"} {
		delete(block, k)
	}
	block["mlp.gate.weight"] = "ffn_gate_inp.weight"
	block["mlp.shared_expert.gate_proj.weight"] = "ffn_gate_shexp.weight"
	block["mlp.shared_expert.up_proj.weight"] = "ffn_up_shexp.weight"
	block["mlp.shared_expert.down_proj.weight"] = "ffn_down_shexp.weight"
	block["mlp.shared_expert_gate.weight"] = "ffn_gate_inp_shexp.weight"
	Register(&Family{
		Arch: "qwen2moe", HFModelType: "qwen2_moe", HFArchitecture: "Qwen2MoeForCausalLM",
		RopeTheta: 1e6, NormEps: 1e-6,
		Experts: true, ExpertsOnly: true,
		Fix:      qwen2moeFix,
		FromGGUF: qwen2moeFromGGUF, ToGGUF: qwen2moeToGGUF,
		FromHF: qwen2moeFromHF, ToHF: qwen2moeToHF,
		Shapes: llamaShapes, Build: buildLlama,
		Names: NameMap{
			Global: llamaNames.Global, BlockPrefix: llamaNames.BlockPrefix, Block: block, Skip: llamaNames.Skip,
			Experts: map[string]string{
				"mlp.experts.*.gate_proj.weight": "ffn_gate_exps.weight",
				"mlp.experts.*.up_proj.weight":   "ffn_up_exps.weight",
				"mlp.experts.*.down_proj.weight": "ffn_down_exps.weight",
			},
		},
	})
}

// qwen2moeFix: NeoX RoPE, q/k/v biases, top-k weights as they are, and llama.cpp's widths
// where a file gives none (an expert FFN/experts-used, the shared expert FFN).
func qwen2moeFix(c *Config) {
	c.RopeNeoX, c.QKVBias, c.ExpertsNorm = true, true, false
	if c.ExpertFFN == 0 && c.ExpertsUsed > 0 {
		c.ExpertFFN = c.FFN / c.ExpertsUsed
	}
	if c.SharedFFN == 0 {
		c.SharedFFN = c.FFN
	}
}

func qwen2moeFromGGUF(f *gguf.File, c *Config) error {
	for _, k := range []struct {
		key string
		dst *int
	}{{"expert_feed_forward_length", &c.ExpertFFN}, {"expert_shared_feed_forward_length", &c.SharedFFN}} {
		if _, ok := f.Get(c.Arch + "." + k.key); !ok {
			continue
		}
		v, ok := f.Uint(c.Arch + "." + k.key)
		if !ok || v == 0 || v > MaxFFN {
			return fmt.Errorf("%s.%s is not a width in [1, %d]", c.Arch, k.key, MaxFFN)
		}
		*k.dst = int(v)
	}
	return nil
}

func qwen2moeToGGUF(c *Config) []gguf.KV {
	return []gguf.KV{
		{Key: c.Arch + ".expert_feed_forward_length", Value: gguf.U32(uint32(c.ExpertWidth()))},
		{Key: c.Arch + ".expert_shared_feed_forward_length", Value: gguf.U32(uint32(c.SharedFFN))},
	}
}

// qwen2moeFromHF reads moe_intermediate_size and shared_expert_intermediate_size, and refuses
// what llama.cpp's qwen2moe cannot express: renormalised top-k (norm_topk_prob), dense layers
// (decoder_sparse_step > 1, mlp_only_layers).
func qwen2moeFromHF(hc *hfdir.Config, c *Config) error {
	num := func(key string) (int, bool, error) {
		v, ok := hc.Raw[key]
		if !ok || v == nil {
			return 0, false, nil
		}
		n, isNum := v.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil || i < 0 || i > MaxFFN {
			return 0, false, fmt.Errorf("config.json %s = %v is not a width in [0, %d]", key, v, MaxFFN)
		}
		return int(i), true, nil
	}
	for _, k := range []struct {
		key string
		dst *int
	}{{"moe_intermediate_size", &c.ExpertFFN}, {"shared_expert_intermediate_size", &c.SharedFFN}} {
		v, ok, err := num(k.key)
		if err != nil {
			return err
		}
		if ok && v > 0 {
			*k.dst = v
		}
	}
	if v, ok := hc.Raw["norm_topk_prob"].(bool); ok && v {
		return fmt.Errorf("config.json norm_topk_prob = true: renormalised top-k weights are not Qwen2-MoE's (llama.cpp's qwen2moe has none)")
	}
	if v, ok, err := num("decoder_sparse_step"); err != nil || (ok && v > 1) {
		return fmt.Errorf("config.json decoder_sparse_step = %v: only every layer a mixture of experts (1) is supported", hc.Raw["decoder_sparse_step"])
	}
	if v, ok := hc.Raw["mlp_only_layers"].([]any); ok && len(v) > 0 {
		return fmt.Errorf("config.json mlp_only_layers = %v: dense layers among the experts are not supported", v)
	}
	return nil
}

func qwen2moeToHF(c *Config, hc *hfdir.Config) {
	if hc.Raw == nil {
		hc.Raw = map[string]any{}
	}
	hc.Raw["num_experts"], hc.Raw["num_experts_per_tok"] = c.Experts, c.ExpertsUsed
	hc.Raw["moe_intermediate_size"], hc.Raw["shared_expert_intermediate_size"] = c.ExpertWidth(), c.SharedFFN
	hc.Raw["norm_topk_prob"], hc.Raw["decoder_sparse_step"], hc.Raw["mlp_only_layers"] = false, 1, []int{}
}
