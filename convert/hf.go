// This file implements WriteHF: a Plan as a Hugging Face model directory — config.json,
// generation_config.json, model.safetensors (sharded above Options.ShardBytes),
// tokenizer.json and tokenizer_config.json. For llama/mistral the q/k projection rows are put
// back from GGUF's adjacent-pair order into Hugging Face's rotate-half order (the inverse of
// model.PermuteRope), so that transformers and model.LoadHF read the same network.
package convert

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// DefaultShardBytes is the default largest safetensors shard (transformers' 5 GB).
const DefaultShardBytes = 5_000_000_000

var hfArch = map[string]string{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
	"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}

// WriteHF writes p into the directory dir (created if needed).
func WriteHF(dir string, p *Plan, opts Options) error {
	c := p.Config
	if err := c.Validate(); err != nil {
		return fmt.Errorf("convert: %s: %w", dir, err)
	}
	if _, _, err := opts.weightType(); err != nil {
		return err
	}
	if hasTensor(p.Tensors, model.RopeFreqsName) && c.RopeScaling == nil {
		return fmt.Errorf("convert: %s: the model's %s (Llama 3 rope scaling baked into GGUF) has no config.json equivalent; not supported", dir, model.RopeFreqsName)
	}
	var tokJSON []byte
	if p.Vocab != nil {
		var err error
		if tokJSON, err = tokenizer.MarshalHFJSON(p.Vocab); err != nil {
			return fmt.Errorf("convert: %s: %w", dir, err)
		}
	}
	var outs []outTensor
	dtypes := map[tensor.DType]int{}
	for i := range p.Tensors {
		t := &p.Tensors[i]
		if t.Name == model.RopeFreqsName {
			continue // recomputed from rope_scaling
		}
		name, ok := hfName(t.Name)
		if !ok {
			return fmt.Errorf("convert: %s: tensor %s has no Hugging Face name", dir, t.Name)
		}
		dt, err := outType(t, &opts, true)
		if err != nil {
			return err
		}
		if len(t.Shape) == 2 {
			dtypes[dt]++
		}
		var transform func(*tensor.Tensor) (*tensor.Tensor, error)
		if heads := qkHeads(t.Name, &c); heads > 0 {
			h := heads
			transform = func(src *tensor.Tensor) (*tensor.Tensor, error) {
				if len(src.Shape) == 1 && src.Type.Quantized() {
					var err error
					if src, err = tensor.Convert(src, tensor.F32); err != nil {
						return nil, err
					}
				}
				return model.UnpermuteRope(src, h)
			}
		}
		outs = append(outs, outTensor{Name: name, Type: dt, Shape: t.Shape, Gen: converted(t, dt, transform)})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	shard := opts.ShardBytes
	if shard <= 0 {
		shard = DefaultShardBytes
	}
	if err := writeSafetensorsDir(dir, outs, shard); err != nil {
		return err
	}
	torch := "float32"
	best := 0
	for dt, n := range dtypes {
		if n > best {
			best, torch = n, map[tensor.DType]string{tensor.F32: "float32", tensor.F16: "float16", tensor.BF16: "bfloat16"}[dt]
		}
	}
	hc := &hfdir.Config{
		Architectures: []string{hfArch[c.Arch]}, ModelType: c.Arch, HiddenSize: c.Dim,
		IntermediateSize: c.FFN, NumHiddenLayers: c.Layers, NumAttentionHeads: c.Heads,
		NumKeyValueHeads: c.KVHeads, VocabSize: c.Vocab, MaxPositionEmbeddings: c.CtxLen,
		RMSNormEps: shortFloat(c.NormEps), RopeTheta: c.RopeTheta, TieWordEmbeddings: c.Tied,
		AttentionBias: c.QKVBias && c.Arch != "qwen2", TorchDtype: torch,
		Raw: map[string]any{"hidden_act": "silu", "transformers_version": "4.46.0", "use_cache": true},
	}
	if c.HeadDim*c.Heads != c.Dim || c.Arch == "qwen3" {
		hc.HeadDim = c.HeadDim
	}
	if r := c.RopeScaling; r != nil {
		hc.RopeScaling = &hfdir.RopeScaling{Type: "llama3", Factor: r.Factor, LowFreqFactor: r.LowFreqFactor,
			HighFreqFactor: r.HighFreqFactor, OriginalMaxPositionEmbeddings: r.OriginalMaxPositions}
	}
	gen := &hfdir.GenerationConfig{Temperature: p.Defaults.Temperature, TopP: p.Defaults.TopP,
		TopK: p.Defaults.TopK, MinP: p.Defaults.MinP, RepetitionPenalty: p.Defaults.RepetitionPenalty,
		MaxNewTokens: p.Defaults.MaxNewTokens, Raw: map[string]any{}}
	if v := p.Vocab; v != nil {
		if v.BOS >= 0 && v.BOS < c.Vocab {
			b := v.BOS
			hc.BOSTokenID, gen.BOSTokenID = &b, &b
		}
		if v.EOS >= 0 && v.EOS < c.Vocab {
			hc.EOSTokenIDs, gen.EOSTokenIDs = []int{v.EOS}, []int{v.EOS}
		}
	}
	if err := hfdir.WriteConfig(filepath.Join(dir, hfdir.ConfigFile), hc); err != nil {
		return err
	}
	if err := hfdir.WriteGenerationConfig(filepath.Join(dir, hfdir.GenerationFile), gen); err != nil {
		return err
	}
	if p.Vocab != nil {
		if err := os.WriteFile(filepath.Join(dir, hfdir.TokenizerJSONFile), tokJSON, 0o644); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		if err := hfdir.WriteTokenizerConfig(filepath.Join(dir, hfdir.TokenizerConfigFile), tokenizer.HFConfig(p.Vocab, p.ChatTemplate, p.Config.CtxLen)); err != nil {
			return err
		}
	}
	return nil
}

// hfName is model.HFName's inverse for the names WriteHF writes.
func hfName(gguf string) (string, bool) {
	switch gguf {
	case "token_embd.weight":
		return "model.embed_tokens.weight", true
	case "output_norm.weight":
		return "model.norm.weight", true
	case "output.weight":
		return "lm_head.weight", true
	}
	rest, ok := strings.CutPrefix(gguf, "blk.")
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	if _, err := strconv.Atoi(rest[:i]); err != nil {
		return "", false
	}
	for _, s := range []string{"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
		"self_attn.v_proj.weight", "self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
		"self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight",
		"post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"} {
		hf := "model.layers." + rest[:i] + "." + s
		if g, err := model.HFName(hf); err == nil && g == gguf {
			return hf, true
		}
	}
	return "", false
}

// qkHeads is the head count to un-permute t by, or 0 when t keeps its layout.
func qkHeads(name string, c *model.Config) int {
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

// shortFloat widens a float32 to the float64 with the shortest decimal spelling that rounds
// back to it (1e-05, not 9.999999747378752e-06).
func shortFloat(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}
