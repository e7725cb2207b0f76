// This file implements LoadHF: a Hugging Face model directory (config.json + safetensors)
// mapped onto GGUF tensor names. For llama/mistral the q_proj and k_proj rows are permuted
// as llama.cpp's HF-to-GGUF converter does, turning HF's rotate-half RoPE layout into the
// adjacent-pair ("normal") layout, so the result equals the GGUF converted from the same
// checkpoint. Qwen2/Qwen3 keep HF's layout and run in NeoX (rotate-half) mode.
package model

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/tensor"
)

// hfLayerNames maps the per-layer HF suffixes to GGUF suffixes.
var hfLayerNames = map[string]string{
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
}

var hfLayerRe = regexp.MustCompile(`^model\.layers\.(\d+)\.(.+)$`)

// HFName returns the GGUF name for an HF tensor name, or "" for tensors llmcloud does not
// use (rotary_emb.inv_freq buffers, a tied lm_head).
func HFName(name string) (string, error) {
	switch name {
	case "model.embed_tokens.weight":
		return "token_embd.weight", nil
	case "model.norm.weight":
		return "output_norm.weight", nil
	case "lm_head.weight":
		return "output.weight", nil
	}
	if m := hfLayerRe.FindStringSubmatch(name); m != nil {
		if m[2] == "self_attn.rotary_emb.inv_freq" {
			return "", nil
		}
		if g, ok := hfLayerNames[m[2]]; ok {
			l, _ := strconv.Atoi(m[1])
			return fmt.Sprintf("blk.%d.%s", l, g), nil
		}
	}
	return "", fmt.Errorf("unknown tensor %s", name)
}

// ConfigFromHF maps config.json onto a Config. QKVBias is set later from the tensors.
func ConfigFromHF(c *hfdir.Config) (Config, error) {
	cfg := Config{
		Arch: c.ModelType, Dim: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads,
		KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDimension(), FFN: c.IntermediateSize,
		Vocab: c.VocabSize, CtxLen: c.MaxPositionEmbeddings, RopeTheta: c.RopeTheta,
		NormEps: float32(c.RMSNormEps), Tied: c.TieWordEmbeddings,
		QKVBias: c.ModelType == "qwen2" || c.AttentionBias, QKNorm: c.ModelType == "qwen3",
	}
	// Before model_type: a MoE variant (mixtral, qwen3_moe) is refused as such.
	var err error
	if cfg.Experts, cfg.ExpertsUsed, err = hfExperts(c.Raw); err != nil {
		return cfg, err
	}
	switch c.ModelType {
	case "llama", "mistral":
	case "qwen2", "qwen3":
		cfg.RopeNeoX = true
	default:
		return cfg, fmt.Errorf("model_type %q is not supported", c.ModelType)
	}
	if rs := c.RopeScaling; rs != nil && rs.Type != "default" {
		if rs.Type != "llama3" {
			return cfg, fmt.Errorf("rope_scaling type %q is not supported", rs.Type)
		}
		cfg.RopeScaling = &RopeScaling{Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor,
			HighFreqFactor: rs.HighFreqFactor, OriginalMaxPositions: rs.OriginalMaxPositionEmbeddings}
	}
	return cfg, cfg.Validate()
}

// LoadHF opens the model directory dir; Close the model to release the safetensors files.
func LoadHF(dir string) (*Model, error) {
	d, err := hfdir.Load(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := ConfigFromHF(d.Config)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", dir, err)
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	m, err := fromHFTensors(cfg, set.Tensors)
	if err != nil {
		set.Close()
		return nil, fmt.Errorf("model: %s: %w", dir, err)
	}
	m.closer = set.Close
	return m, nil
}

// fromHFTensors renames (and for llama/mistral permutes) HF tensors and builds the model.
func fromHFTensors(cfg Config, hf map[string]*tensor.Tensor) (*Model, error) {
	ws := make(map[string]*tensor.Tensor, len(hf))
	for name, t := range hf {
		g, err := HFName(name)
		if err != nil {
			return nil, err
		}
		if g == "" || (g == "output.weight" && cfg.Tied) {
			continue
		}
		ws[g] = t
	}
	if _, ok := ws["output.weight"]; !ok {
		cfg.Tied = true
	}
	if !cfg.RopeNeoX {
		for l := 0; l < cfg.Layers; l++ {
			for _, p := range []struct {
				name  string
				heads int
			}{{"attn_q.weight", cfg.Heads}, {"attn_k.weight", cfg.KVHeads}, {"attn_q.bias", cfg.Heads}, {"attn_k.bias", cfg.KVHeads}} {
				n := fmt.Sprintf("blk.%d.%s", l, p.name)
				t, ok := ws[n]
				if !ok {
					continue
				}
				pt, err := PermuteRope(t, p.heads)
				if err != nil {
					return nil, err
				}
				ws[n] = pt
			}
		}
	}
	return New(cfg, ws)
}

// PermuteRope reorders the rows of a q/k projection (weight [heads*headDim, in] or bias
// [heads*headDim]) from HF's rotate-half layout to the adjacent-pair layout: within each
// head, new row 2i+s is old row s*headDim/2+i (s = 0, 1). This is llama.cpp's converter
// permutation; whole rows move, so any dtype works. The result owns new memory.
func PermuteRope(t *tensor.Tensor, heads int) (*tensor.Tensor, error) {
	return permuteRope(t, heads, false)
}

// UnpermuteRope is the inverse of PermuteRope (adjacent-pair rows back to HF's rotate-half
// order), used when writing Hugging Face checkpoints.
func UnpermuteRope(t *tensor.Tensor, heads int) (*tensor.Tensor, error) {
	return permuteRope(t, heads, true)
}

func permuteRope(t *tensor.Tensor, heads int, inverse bool) (*tensor.Tensor, error) {
	if len(t.Shape) == 0 || heads <= 0 || t.Shape[0]%(2*heads) != 0 {
		return nil, fmt.Errorf("%s: shape %v cannot be split into %d heads of even size", t.Name, t.Shape, heads)
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	rows := t.Shape[0]
	rb := len(t.Data) / rows
	hd := rows / heads
	out := &tensor.Tensor{Name: t.Name, Type: t.Type, Shape: append([]int(nil), t.Shape...), Data: make([]byte, len(t.Data))}
	for h := 0; h < heads; h++ {
		for i := 0; i < hd/2; i++ {
			for s := 0; s < 2; s++ {
				pair, half := h*hd+2*i+s, h*hd+s*hd/2+i // adjacent-pair row, rotate-half row
				dst, src := pair, half
				if inverse {
					dst, src = half, pair
				}
				copy(out.Data[dst*rb:(dst+1)*rb], t.Data[src*rb:(src+1)*rb])
			}
		}
	}
	return out, nil
}
