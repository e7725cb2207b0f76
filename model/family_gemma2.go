// This file registers gemma2 (Gemma 2): pre- and post-norms around attention and the
// feed-forward, GeGLU (GELU tanh approximation), the embedding scaled by sqrt(dim), attention
// scores scaled by 1/sqrt(query_pre_attn_scalar) and soft-capped, sliding-window attention on
// the even layers (0, 2, ...: llama.cpp's and transformers' choice) and full attention on
// the odd ones, soft-capped final logits, the output tied to the embedding, NeoX RoPE. The
// builder is gemma2_graph.go.
//
// GGUF (llama.cpp's names): gemma2.attention.sliding_window (absent: 4096),
// gemma2.attn_logit_softcapping (absent: 50), gemma2.final_logit_softcapping (absent: 30), as
// llama.cpp defaults them. llama.cpp has no key for query_pre_attn_scalar: it takes the head
// dim, or dim/heads for the 46-layer 27B; llmcloud does the same and writes its own key
// gemma2.attention.query_pre_attn_scalar only for a model where that rule is wrong. Norm
// weights: Gemma's RMSNorm multiplies by (1 + w); llama.cpp's converter stores 1 + w in the
// GGUF, so a Hugging Face checkpoint's norms get +1 on reading (FromHFTensor) and -1 on
// writing (ToHFTensor).
package model

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/tensor"
)

// Gemma 2's defaults where a file leaves a field out (llama.cpp's and transformers').
const (
	gemma2Window       = 4096
	gemma2AttnSoftcap  = 50
	gemma2FinalSoftcap = 30
	gemma2ScalarKey    = "gemma2.attention.query_pre_attn_scalar" // llmcloud's, see the file comment
)

func init() {
	Register(&Family{
		Arch: "gemma2", HFModelType: "gemma2", HFArchitecture: "Gemma2ForCausalLM",
		RopeTheta: 10000, NormEps: 1e-6,
		Fix:      gemma2Fix,
		FromGGUF: gemma2FromGGUF, ToGGUF: gemma2ToGGUF,
		FromHF: gemma2FromHF, ToHF: gemma2ToHF,
		Shapes: gemma2Shapes, Build: buildGemma2, Names: gemma2Names,
		FromHFTensor: func(c *Config, name string) TensorFunc { return gemma2NormShift(name, 1) },
		ToHFTensor:   func(c *Config, name string) TensorFunc { return gemma2NormShift(name, -1) },
	})
}

// gemma2Fix: NeoX RoPE, tied output; the defaults of the window, soft-caps and scale.
func gemma2Fix(c *Config) {
	c.RopeNeoX, c.Tied = true, true
	if c.SlidingWindow == 0 {
		c.SlidingWindow = gemma2Window
	}
	if c.AttnSoftcap == 0 {
		c.AttnSoftcap = gemma2AttnSoftcap
	}
	if c.FinalSoftcap == 0 {
		c.FinalSoftcap = gemma2FinalSoftcap
	}
	if c.AttnScalar == 0 {
		c.AttnScalar = gemma2LlamaCppScalar(c)
	}
}

// gemma2LlamaCppScalar is the query_pre_attn_scalar llama.cpp assumes: dim/heads for the
// 46-layer model (27B), else the head dim.
func gemma2LlamaCppScalar(c *Config) float64 {
	if c.Layers == 46 && c.Heads > 0 {
		return float64(c.Dim / c.Heads)
	}
	return float64(c.HeadDim)
}

// IsLocalLayer reports whether layer l of c attends through a sliding window: Gemma 2's even
// layers, or with a SlidingPattern p (Gemma 3) every layer but each p-th.
func (c *Config) IsLocalLayer(l int) bool {
	if c.SlidingWindow <= 0 {
		return false
	}
	if c.SlidingPattern > 0 {
		return (l+1)%c.SlidingPattern != 0
	}
	return c.Arch == "gemma2" && l%2 == 0
}

// checkGemma checks the Gemma fields (any family may leave them zero).
func (c *Config) checkGemma() error {
	if c.SlidingWindow < 0 {
		return fmt.Errorf("model: config sliding_window = %d, must not be negative", c.SlidingWindow)
	}
	if c.SlidingPattern < 0 || c.SlidingPattern > MaxLayers+1 {
		return fmt.Errorf("model: config sliding_window_pattern = %d out of range [0, %d]", c.SlidingPattern, MaxLayers+1)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"attn_logit_softcapping", c.AttnSoftcap}, {"final_logit_softcapping", c.FinalSoftcap},
		{"query_pre_attn_scalar", c.AttnScalar}, {"rope_local_base_freq", c.RopeLocalTheta},
		{"rope_scaling.factor", c.RopeLinear}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("model: config %s = %v, must be finite and not negative", f.name, f.v)
		}
	}
	return nil
}

// gemma2FromGGUF reads llama.cpp's keys (defaults as llama.cpp's) and llmcloud's scalar key.
func gemma2FromGGUF(f *gguf.File, c *Config) error {
	c.SlidingWindow, c.AttnSoftcap, c.FinalSoftcap = gemma2Window, gemma2AttnSoftcap, gemma2FinalSoftcap
	if v, ok := f.Get("gemma2.attention.sliding_window"); ok {
		w, ok := f.Uint("gemma2.attention.sliding_window")
		if !ok || w > 1<<31 {
			return fmt.Errorf("gemma2.attention.sliding_window = %v out of range", v)
		}
		c.SlidingWindow = int(w)
	}
	for _, k := range []struct {
		key string
		dst *float64
	}{{"gemma2.attn_logit_softcapping", &c.AttnSoftcap}, {"gemma2.final_logit_softcapping", &c.FinalSoftcap},
		{gemma2ScalarKey, &c.AttnScalar}} {
		if _, ok := f.Get(k.key); !ok {
			continue
		}
		v, ok := f.Float(k.key)
		if !ok {
			return fmt.Errorf("%s is not a number", k.key)
		}
		*k.dst = v
	}
	if _, ok := f.Get(gemma2ScalarKey); !ok {
		c.AttnScalar = gemma2LlamaCppScalar(c)
	}
	return nil
}

// gemma2ToGGUF writes llama.cpp's keys, and the scalar where llama.cpp's rule misses it.
func gemma2ToGGUF(c *Config) []gguf.KV {
	kv := []gguf.KV{
		{Key: "gemma2.attention.sliding_window", Value: gguf.U32(uint32(c.SlidingWindow))},
		{Key: "gemma2.attn_logit_softcapping", Value: gguf.F32(float32(c.AttnSoftcap))},
		{Key: "gemma2.final_logit_softcapping", Value: gguf.F32(float32(c.FinalSoftcap))},
	}
	if c.AttnScalar != gemma2LlamaCppScalar(c) {
		kv = append(kv, gguf.KV{Key: gemma2ScalarKey, Value: gguf.F32(float32(c.AttnScalar))})
	}
	return kv
}

// gemma2FromHF reads config.json's Gemma 2 fields (null soft-caps: none).
func gemma2FromHF(hc *hfdir.Config, c *Config) error {
	if v, ok := hc.Raw["tie_word_embeddings"]; ok && v == false {
		return fmt.Errorf("config.json tie_word_embeddings = false: Gemma 2's output is the embedding")
	}
	for _, k := range []string{"hidden_activation", "hidden_act"} {
		if v, ok := hc.Raw[k]; ok && v != nil && v != "gelu_pytorch_tanh" && !(k == "hidden_act" && v == "gelu") {
			if _, both := hc.Raw["hidden_activation"]; k == "hidden_act" && both {
				continue // hidden_activation decides
			}
			return fmt.Errorf("config.json %s = %v: only gelu_pytorch_tanh is supported", k, v)
		}
	}
	num := func(key string, dst *float64, nullIs float64) error {
		v, ok := hc.Raw[key]
		if !ok {
			return nil
		}
		if v == nil {
			*dst = nullIs
			return nil
		}
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("config.json %s = %v is not a number", key, v)
		}
		f, err := n.Float64()
		if err != nil {
			return fmt.Errorf("config.json %s: %w", key, err)
		}
		*dst = f
		return nil
	}
	var w float64 = float64(c.SlidingWindow)
	if err := num("sliding_window", &w, 0); err != nil {
		return err
	}
	if w != math.Trunc(w) || w < 0 || w > 1<<31 {
		return fmt.Errorf("config.json sliding_window = %v is not a window size", w)
	}
	c.SlidingWindow = int(w)
	c.AttnScalar = 256 // transformers' Gemma2Config default
	for _, k := range []struct {
		key string
		dst *float64
	}{{"attn_logit_softcapping", &c.AttnSoftcap}, {"final_logit_softcapping", &c.FinalSoftcap},
		{"query_pre_attn_scalar", &c.AttnScalar}} {
		if err := num(k.key, k.dst, 0); err != nil {
			return err
		}
	}
	return nil
}

// gemma2ToHF writes config.json's Gemma 2 fields.
func gemma2ToHF(c *Config, hc *hfdir.Config) {
	hc.HeadDim, hc.TieWordEmbeddings = c.HeadDim, true
	capOrNull := func(v float64) any {
		if v == 0 {
			return nil
		}
		return v
	}
	hc.Raw["hidden_act"] = "gelu_pytorch_tanh"
	hc.Raw["hidden_activation"] = "gelu_pytorch_tanh"
	hc.Raw["sliding_window"] = c.SlidingWindow
	hc.Raw["attn_logit_softcapping"] = capOrNull(c.AttnSoftcap)
	hc.Raw["final_logit_softcapping"] = capOrNull(c.FinalSoftcap)
	hc.Raw["query_pre_attn_scalar"] = c.AttnScalar
}

// gemma2Names is Gemma 2's and Gemma 3's Hugging Face naming (no lm_head: the output is the
// embedding; q_norm and k_norm are Gemma 3's).
var gemma2Names = NameMap{
	Global: map[string]string{
		"model.embed_tokens.weight": "token_embd.weight",
		"model.norm.weight":         "output_norm.weight",
	},
	BlockPrefix: "model.layers.",
	Block: map[string]string{
		"input_layernorm.weight":            "attn_norm.weight",
		"self_attn.q_proj.weight":           "attn_q.weight",
		"self_attn.k_proj.weight":           "attn_k.weight",
		"self_attn.v_proj.weight":           "attn_v.weight",
		"self_attn.o_proj.weight":           "attn_output.weight",
		"self_attn.q_norm.weight":           "attn_q_norm.weight", // Gemma 3's
		"self_attn.k_norm.weight":           "attn_k_norm.weight",
		"post_attention_layernorm.weight":   "post_attention_norm.weight",
		"pre_feedforward_layernorm.weight":  "ffn_norm.weight",
		"post_feedforward_layernorm.weight": "post_ffw_norm.weight",
		"mlp.gate_proj.weight":              "ffn_gate.weight",
		"mlp.up_proj.weight":                "ffn_up.weight",
		"mlp.down_proj.weight":              "ffn_down.weight",
	},
	Skip: []string{"self_attn.rotary_emb.inv_freq"},
}

// gemma2Shapes lists Gemma 2's tensors by llama.cpp's names (with QKNorm, Gemma 3's).
func gemma2Shapes(c *Config) map[string][]int {
	s := map[string][]int{
		"token_embd.weight":  {c.Vocab, c.Dim},
		"output_norm.weight": {c.Dim},
	}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		s[p+"attn_norm.weight"] = []int{c.Dim}
		s[p+"attn_q.weight"] = []int{c.QDim(), c.Dim}
		s[p+"attn_k.weight"] = []int{c.KVDim(), c.Dim}
		s[p+"attn_v.weight"] = []int{c.KVDim(), c.Dim}
		s[p+"attn_output.weight"] = []int{c.Dim, c.QDim()}
		if c.QKNorm { // Gemma 3
			s[p+"attn_q_norm.weight"] = []int{c.HeadDim}
			s[p+"attn_k_norm.weight"] = []int{c.HeadDim}
		}
		s[p+"post_attention_norm.weight"] = []int{c.Dim}
		s[p+"ffn_norm.weight"] = []int{c.Dim}
		s[p+"ffn_gate.weight"] = []int{c.FFN, c.Dim}
		s[p+"ffn_up.weight"] = []int{c.FFN, c.Dim}
		s[p+"ffn_down.weight"] = []int{c.Dim, c.FFN}
		s[p+"post_ffw_norm.weight"] = []int{c.Dim}
	}
	return s
}

// gemma2NormShift adds by to every element of a norm weight (HF's w <-> GGUF's 1 + w); nil for
// other tensors.
func gemma2NormShift(name string, by float32) TensorFunc {
	if !strings.HasSuffix(name, "norm.weight") {
		return nil
	}
	return func(t *tensor.Tensor) (*tensor.Tensor, error) {
		v, err := t.Float32()
		if err != nil {
			return nil, err
		}
		data := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x+by))
		}
		r := &tensor.Tensor{Name: t.Name, Type: tensor.F32, Shape: append([]int(nil), t.Shape...), Data: data}
		if t.Type != tensor.F32 {
			return tensor.Convert(r, t.Type)
		}
		return r, nil
	}
}
