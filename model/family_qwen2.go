// This file registers qwen2 (Qwen2, Qwen2.5): the Llama block with q/k/v biases and NeoX
// (rotate-half) RoPE, built by the Llama family's builder.
package model

func init() {
	Register(&Family{
		Arch: "qwen2", HFModelType: "qwen2", HFArchitecture: "Qwen2ForCausalLM",
		RopeTheta: 1e6, NormEps: 1e-6,
		Fix:      func(c *Config) { c.RopeNeoX, c.QKVBias = true, true },
		FromGGUF: llamaFromGGUF, FromHF: llamaFromHF,
		// No ToHF: attention_bias stays unwritten, qwen2's biases are implied by model_type.
		Shapes: llamaShapes, Build: buildLlama, Names: llamaNames,
	})
}
