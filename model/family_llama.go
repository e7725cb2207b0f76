// This file registers the Llama family's plain members, llama (Llama 2/3, TinyLlama) and
// mistral, and holds what the whole family (also qwen2, qwen3: family_qwen2.go,
// family_qwen3.go) shares: its tensors (llamaShapes), their Hugging Face names
// (llamaNames), the config hooks, the q/k row permutation of HF llama checkpoints, and the
// graph builder (buildLlama, in llama_graph.go).
package model

import (
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	for _, f := range []struct{ arch, hf string }{{"llama", "LlamaForCausalLM"}, {"mistral", "MistralForCausalLM"}} {
		fam := &Family{
			Arch: f.arch, HFModelType: f.arch, HFArchitecture: f.hf,
			RopeTheta: 10000, NormEps: 1e-5,
			FromGGUF: llamaFromGGUF, FromHF: llamaFromHF, ToHF: llamaToHF,
			Shapes: llamaShapes, Build: buildLlama, Names: llamaNames,
			FromHFTensor: llamaFromHFTensor, ToHFTensor: llamaToHFTensor,
			Llama2C: true,
		}
		if f.arch == "llama" {
			// Mixtral: llama.cpp's llama architecture with <arch>.expert_count experts;
			// Hugging Face's mixtral model_type.
			fam.Experts, fam.HFMoEModelType, fam.HFMoEArchitecture = true, "mixtral", "MixtralForCausalLM"
			fam.Fix = func(c *Config) { c.ExpertsNorm = c.Experts > 0 } // Mixtral renormalises its top-k
		}
		Register(fam)
	}
}

// llamaToHF writes attention_bias and Mixtral's expert counts.
func llamaToHF(c *Config, hc *hfdir.Config) {
	hc.AttentionBias = c.QKVBias
	if c.Experts > 0 {
		if hc.Raw == nil {
			hc.Raw = map[string]any{}
		}
		hc.Raw["num_local_experts"], hc.Raw["num_experts_per_tok"] = c.Experts, c.ExpertsUsed
	}
}

// llamaNames is the Hugging Face naming of every Llama-family checkpoint.
var llamaNames = NameMap{
	Global: map[string]string{
		"model.embed_tokens.weight": "token_embd.weight",
		"model.norm.weight":         "output_norm.weight",
		"lm_head.weight":            "output.weight",
	},
	BlockPrefix: "model.layers.",
	Block: map[string]string{
		"input_layernorm.weight":          "attn_norm.weight",
		"self_attn.q_proj.weight":         "attn_q.weight",
		"self_attn.k_proj.weight":         "attn_k.weight",
		"self_attn.v_proj.weight":         "attn_v.weight",
		"self_attn.q_proj.bias":           "attn_q.bias",
		"self_attn.k_proj.bias":           "attn_k.bias",
		"self_attn.v_proj.bias":           "attn_v.bias",
		"self_attn.o_proj.weight":         "attn_output.weight",
		"self_attn.q_norm.weight":         "attn_q_norm.weight",
		"self_attn.k_norm.weight":         "attn_k_norm.weight",
		"post_attention_layernorm.weight": "ffn_norm.weight",
		"mlp.gate_proj.weight":            "ffn_gate.weight",
		"mlp.up_proj.weight":              "ffn_up.weight",
		"mlp.down_proj.weight":            "ffn_down.weight",
		"block_sparse_moe.gate.weight":    "ffn_gate_inp.weight",
	},
	Skip: []string{"self_attn.rotary_emb.inv_freq"},
	// Mixtral's block_sparse_moe (w1 gate, w3 up, w2 down), as llama.cpp's converter maps it.
	Experts: map[string]string{
		"block_sparse_moe.experts.*.w1.weight": "ffn_gate_exps.weight",
		"block_sparse_moe.experts.*.w3.weight": "ffn_up_exps.weight",
		"block_sparse_moe.experts.*.w2.weight": "ffn_down_exps.weight",
	},
}

// llamaFromGGUF reads the optional parts of the block from the tensors a file holds: q/k/v
// biases (qwen2) and q/k norms (qwen3).
func llamaFromGGUF(f *gguf.File, c *Config) error {
	_, c.QKVBias = f.Tensor("blk.0.attn_q.bias")
	_, c.QKNorm = f.Tensor("blk.0.attn_q_norm.weight")
	return nil
}

// llamaFromHF adds config.json's attention_bias to the biases the architecture implies.
func llamaFromHF(hc *hfdir.Config, c *Config) error {
	c.QKVBias = c.QKVBias || hc.AttentionBias
	return nil
}

// llamaShapes lists the family's tensors: the optional ones by c's flags.
func llamaShapes(c *Config) map[string][]int {
	s := map[string][]int{
		"token_embd.weight":  {c.Vocab, c.Dim},
		"output_norm.weight": {c.Dim},
	}
	if !c.Tied {
		s["output.weight"] = []int{c.Vocab, c.Dim}
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		s[p+"attn_norm.weight"] = []int{c.Dim}
		s[p+"attn_q.weight"] = []int{c.QDim(), c.Dim}
		s[p+"attn_k.weight"] = []int{c.KVDim(), c.Dim}
		s[p+"attn_v.weight"] = []int{c.KVDim(), c.Dim}
		s[p+"attn_output.weight"] = []int{c.Dim, c.QDim()}
		if c.QKVBias {
			s[p+"attn_q.bias"] = []int{c.QDim()}
			s[p+"attn_k.bias"] = []int{c.KVDim()}
			s[p+"attn_v.bias"] = []int{c.KVDim()}
		}
		if c.QKNorm {
			s[p+"attn_q_norm.weight"] = []int{c.HeadDim}
			s[p+"attn_k_norm.weight"] = []int{c.HeadDim}
		}
		s[p+"ffn_norm.weight"] = []int{c.Dim}
		if c.Experts > 0 { // Mixtral, Qwen2-MoE: a router and the experts stacked, as llama.cpp has them
			f := c.ExpertWidth()
			s[p+"ffn_gate_inp.weight"] = []int{c.Experts, c.Dim}
			s[p+"ffn_gate_exps.weight"] = []int{c.Experts, f, c.Dim}
			s[p+"ffn_up_exps.weight"] = []int{c.Experts, f, c.Dim}
			s[p+"ffn_down_exps.weight"] = []int{c.Experts, c.Dim, f}
			if c.SharedFFN > 0 { // Qwen2-MoE's shared expert and its sigmoid gate
				s[p+"ffn_gate_inp_shexp.weight"] = []int{1, c.Dim}
				s[p+"ffn_gate_shexp.weight"] = []int{c.SharedFFN, c.Dim}
				s[p+"ffn_up_shexp.weight"] = []int{c.SharedFFN, c.Dim}
				s[p+"ffn_down_shexp.weight"] = []int{c.Dim, c.SharedFFN}
			}
			continue
		}
		s[p+"ffn_gate.weight"] = []int{c.FFN, c.Dim}
		s[p+"ffn_up.weight"] = []int{c.FFN, c.Dim}
		s[p+"ffn_down.weight"] = []int{c.Dim, c.FFN}
	}
	return s
}

// qkHeads is the head count a llama checkpoint's q/k tensor is permuted by between HF's
// rotate-half layout and GGUF's adjacent pairs, 0 when the tensor keeps its layout (any
// other tensor, or a NeoX-RoPE model, which runs HF's layout as it is).
func qkHeads(c *Config, name string) int {
	if c.RopeNeoX {
		return 0
	}
	switch {
	case strings.HasSuffix(name, ".attn_q.weight"), strings.HasSuffix(name, ".attn_q.bias"):
		return c.Heads
	case strings.HasSuffix(name, ".attn_k.weight"), strings.HasSuffix(name, ".attn_k.bias"):
		return c.KVHeads
	}
	return 0
}

// llamaFromHFTensor permutes q/k rows into the adjacent-pair layout (PermuteRope).
func llamaFromHFTensor(c *Config, name string) TensorFunc {
	h := qkHeads(c, name)
	if h == 0 {
		return nil
	}
	return func(t *tensor.Tensor) (*tensor.Tensor, error) { return PermuteRope(t, h) }
}

// llamaToHFTensor puts q/k rows back into HF's rotate-half order (a quantized bias is
// decoded first: its blocks would straddle the moved rows).
func llamaToHFTensor(c *Config, name string) TensorFunc {
	h := qkHeads(c, name)
	if h == 0 {
		return nil
	}
	return func(t *tensor.Tensor) (*tensor.Tensor, error) {
		if len(t.Shape) == 1 && t.Type.Quantized() {
			var err error
			if t, err = tensor.Convert(t, tensor.F32); err != nil {
				return nil, err
			}
		}
		return UnpermuteRope(t, h)
	}
}
