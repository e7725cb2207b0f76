// This file registers qwen3moe (Qwen3-MoE; Hugging Face's qwen3_moe, Qwen3MoeForCausalLM):
// the qwen3 block (per-head RMSNorm of q and k, NeoX RoPE, head dim free of dim/heads) whose
// feed-forward is a mixture of experts: a softmax router, the top experts_used, their weights
// renormalised to sum 1 when norm_topk_prob (every released Qwen3-MoE), no shared expert
// (graph op moe). Built by the Llama family's builder.
//
// GGUF, as later llama.cpp names it (llama.cpp at c392e5094 has no qwen3moe):
// blk.N.ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps, attn_q_norm, attn_k_norm;
// qwen3moe.expert_count, expert_used_count, expert_feed_forward_length. llama.cpp always
// renormalises Qwen3-MoE's top-k weights; for a model without (norm_topk_prob false),
// llmcloud writes qwen3moe.expert_weights_norm = false (llama.cpp's key name for the same
// switch of other architectures) and reads it (absent: true).
package model

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
)

const qwen3moeNormKey = "qwen3moe.expert_weights_norm"

func init() {
	block := maps.Clone(llamaNames.Block)
	for _, k := range []string{"mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "block_sparse_moe.gate.weight"} {
		delete(block, k)
	}
	block["mlp.gate.weight"] = "ffn_gate_inp.weight"
	Register(&Family{
		Arch: "qwen3moe", HFModelType: "qwen3_moe", HFArchitecture: "Qwen3MoeForCausalLM",
		RopeTheta: 1e6, NormEps: 1e-6,
		Experts: true, ExpertsOnly: true,
		Fix:      qwen3moeFix,
		FromGGUF: qwen3moeFromGGUF, ToGGUF: qwen3moeToGGUF,
		FromHF: qwen3moeFromHF, ToHF: qwen3moeToHF,
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

// qwen3moeFix: NeoX RoPE, q/k norms, renormalised top-k (llama.cpp's; config.json's
// norm_topk_prob and the GGUF key may turn it off), no shared expert, and llama.cpp's expert
// width where a file gives none (FFN / experts used).
func qwen3moeFix(c *Config) {
	c.RopeNeoX, c.QKNorm, c.ExpertsNorm, c.SharedFFN = true, true, true, 0
	if c.ExpertFFN == 0 && c.ExpertsUsed > 0 {
		c.ExpertFFN = c.FFN / c.ExpertsUsed
	}
}

func qwen3moeFromGGUF(f *gguf.File, c *Config) error {
	const key = "qwen3moe.expert_feed_forward_length"
	if _, ok := f.Get(key); ok {
		v, ok := f.Uint(key)
		if !ok || v == 0 || v > MaxFFN {
			return fmt.Errorf("%s is not a width in [1, %d]", key, MaxFFN)
		}
		c.ExpertFFN = int(v)
	}
	if v, ok := f.Get(qwen3moeNormKey); ok {
		b, isBool := v.V.(bool)
		if !isBool {
			return fmt.Errorf("%s = %v is not a boolean", qwen3moeNormKey, v.V)
		}
		c.ExpertsNorm = b
	}
	return nil
}

func qwen3moeToGGUF(c *Config) []gguf.KV {
	kv := []gguf.KV{{Key: "qwen3moe.expert_feed_forward_length", Value: gguf.U32(uint32(c.ExpertWidth()))}}
	if !c.ExpertsNorm {
		kv = append(kv, gguf.KV{Key: qwen3moeNormKey, Value: gguf.Bool(false)})
	}
	return kv
}

// qwen3moeFromHF reads moe_intermediate_size and norm_topk_prob (absent: false, transformers'
// default), and refuses dense layers among the experts (decoder_sparse_step > 1,
// mlp_only_layers) and attention biases.
func qwen3moeFromHF(hc *hfdir.Config, c *Config) error {
	if v, ok := hc.Raw["moe_intermediate_size"]; ok && v != nil {
		n, isNum := v.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil || i <= 0 || i > MaxFFN {
			return fmt.Errorf("config.json moe_intermediate_size = %v is not a width in [1, %d]", v, MaxFFN)
		}
		c.ExpertFFN = int(i)
	}
	c.ExpertsNorm = false
	if v, ok := hc.Raw["norm_topk_prob"]; ok && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return fmt.Errorf("config.json norm_topk_prob = %v is not a boolean", v)
		}
		c.ExpertsNorm = b
	}
	if v, ok := hc.Raw["decoder_sparse_step"]; ok && v != nil {
		if n, isNum := v.(json.Number); !isNum || n.String() != "1" {
			return fmt.Errorf("config.json decoder_sparse_step = %v: only every layer a mixture of experts (1) is supported", v)
		}
	}
	if v, ok := hc.Raw["mlp_only_layers"]; ok && v != nil {
		if l, isList := v.([]any); !isList || len(l) > 0 {
			return fmt.Errorf("config.json mlp_only_layers = %v: dense layers among the experts are not supported", v)
		}
	}
	if hc.AttentionBias {
		return fmt.Errorf("config.json attention_bias = true: Qwen3-MoE has no q/k/v biases")
	}
	return nil
}

func qwen3moeToHF(c *Config, hc *hfdir.Config) {
	if hc.Raw == nil {
		hc.Raw = map[string]any{}
	}
	hc.HeadDim = c.HeadDim // always written, as transformers' Qwen3 configs do
	hc.Raw["num_experts"], hc.Raw["num_experts_per_tok"] = c.Experts, c.ExpertsUsed
	hc.Raw["moe_intermediate_size"], hc.Raw["norm_topk_prob"] = c.ExpertWidth(), c.ExpertsNorm
	hc.Raw["decoder_sparse_step"], hc.Raw["mlp_only_layers"] = 1, []int{}
}
