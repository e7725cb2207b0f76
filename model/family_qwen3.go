// This file registers qwen3 (dense Qwen3): the Llama block with per-head RMSNorm of q and k
// and NeoX (rotate-half) RoPE, its head dim free of dim/heads, built by the Llama family's
// builder.
package model

import "github.com/llmcloud/llmcloud/format/hfdir"

func init() {
	Register(&Family{
		Arch: "qwen3", HFModelType: "qwen3", HFArchitecture: "Qwen3ForCausalLM",
		RopeTheta: 1e6, NormEps: 1e-6,
		Fix:      func(c *Config) { c.RopeNeoX, c.QKNorm = true, true },
		FromGGUF: llamaFromGGUF, FromHF: llamaFromHF,
		ToHF: func(c *Config, hc *hfdir.Config) {
			hc.AttentionBias = c.QKVBias
			hc.HeadDim = c.HeadDim // always written, as transformers' Qwen3 configs do
		},
		Shapes: llamaShapes, Build: buildLlama, Names: llamaNames,
	})
}
