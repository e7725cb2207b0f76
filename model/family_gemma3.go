// This file registers gemma3 (Gemma 3, text: Hugging Face's gemma3_text, Gemma3ForCausalLM):
// Gemma 2's block (pre- and post-norms, GeGLU, the embedding scaled by sqrt(dim), attention
// scaled by 1/sqrt(query_pre_attn_scalar), tied output, NeoX RoPE; the builder is
// gemma2_graph.go's) plus per-head RMSNorm of q and k before RoPE, without soft-caps, with
// five local (sliding-window) layers to one global one (layer l is global when (l+1) % 6 ==
// 0), RoPE base rope_local_base_freq (10000) on the local layers and rope_theta (1e6) on the
// global ones, whose RoPE may be scaled linearly (rope_scaling {rope_type: linear, factor}).
//
// GGUF, as later llama.cpp writes and reads it (llama.cpp at c392e5094 has no gemma3):
// gemma3.attention.sliding_window, gemma3.rope.freq_base (global), gemma3.rope.scaling.type
// "linear" and gemma3.rope.scaling.factor; the pattern (6) and the local base (10000) are
// llama.cpp's constants, so llmcloud writes its own gemma3.attention.sliding_window_pattern
// and llama.cpp's later gemma3.rope.freq_base_swa only when a model differs from them.
// Attention scale as llama.cpp: 1/sqrt(head dim), 1/sqrt(dim/heads) for the 62-layer 27B;
// llmcloud writes gemma3.attention.query_pre_attn_scalar where that rule misses. Norm
// weights (q/k norms too) are GGUF's 1 + Hugging Face's w, as for Gemma 2.
package model

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
)

// Gemma 3's constants where a file leaves them out (llama.cpp's and transformers').
const (
	gemma3Window     = 4096                                      // transformers' Gemma3TextConfig default (real models: 512, 1024)
	gemma3Pattern    = 6                                         // sliding_window_pattern: 5 local, 1 global
	gemma3LocalTheta = 10000                                     // rope_local_base_freq
	gemma3PatternKey = "gemma3.attention.sliding_window_pattern" // llmcloud's, see the file comment
	gemma3LocalKey   = "gemma3.rope.freq_base_swa"
	gemma3ScalarKey  = "gemma3.attention.query_pre_attn_scalar" // llmcloud's
)

func init() {
	Register(&Family{
		Arch: "gemma3", HFModelType: "gemma3_text", HFArchitecture: "Gemma3ForCausalLM",
		RopeTheta: 1e6, NormEps: 1e-6,
		Fix:      gemma3Fix,
		FromGGUF: gemma3FromGGUF, ToGGUF: gemma3ToGGUF,
		FromHF: gemma3FromHF, ToHF: gemma3ToHF,
		Shapes: gemma2Shapes, Build: buildGemma2, Names: gemma2Names,
		FromHFTensor: func(c *Config, name string) TensorFunc { return gemma2NormShift(name, 1) },
		ToHFTensor:   func(c *Config, name string) TensorFunc { return gemma2NormShift(name, -1) },
	})
}

// gemma3Fix: NeoX RoPE, tied output, q/k norms; the window, pattern, local base and scale
// where unset.
func gemma3Fix(c *Config) {
	c.RopeNeoX, c.Tied, c.QKNorm = true, true, true
	c.AttnSoftcap, c.FinalSoftcap = 0, 0 // none (config.json's non-null ones are refused)
	if c.SlidingWindow == 0 {
		c.SlidingWindow = gemma3Window
	}
	if c.SlidingPattern == 0 {
		c.SlidingPattern = gemma3Pattern
	}
	if c.RopeLocalTheta == 0 {
		c.RopeLocalTheta = gemma3LocalTheta
	}
	if c.AttnScalar == 0 {
		c.AttnScalar = gemma3LlamaCppScalar(c)
	}
}

// gemma3LlamaCppScalar is the query_pre_attn_scalar llama.cpp assumes: dim/heads for the
// 62-layer model (27B), else the head dim.
func gemma3LlamaCppScalar(c *Config) float64 {
	if c.Layers == 62 && c.Heads > 0 {
		return float64(c.Dim / c.Heads)
	}
	return float64(c.HeadDim)
}

func gemma3FromGGUF(f *gguf.File, c *Config) error {
	if _, ok := f.Get("gemma3.attention.sliding_window"); ok {
		w, ok := f.Uint("gemma3.attention.sliding_window")
		if !ok || w > 1<<31 {
			return fmt.Errorf("gemma3.attention.sliding_window is not a window size")
		}
		c.SlidingWindow = int(w)
	}
	c.SlidingPattern = gemma3Pattern
	if _, ok := f.Get(gemma3PatternKey); ok {
		p, ok := f.Uint(gemma3PatternKey)
		if !ok || p == 0 || p > MaxLayers+1 {
			return fmt.Errorf("%s is not a layer period in [1, %d]", gemma3PatternKey, MaxLayers+1)
		}
		c.SlidingPattern = int(p)
	}
	for _, k := range []struct {
		key string
		dst *float64
		def float64
	}{{gemma3LocalKey, &c.RopeLocalTheta, gemma3LocalTheta}, {gemma3ScalarKey, &c.AttnScalar, gemma3LlamaCppScalar(c)}} {
		*k.dst = k.def
		if _, ok := f.Get(k.key); !ok {
			continue
		}
		v, ok := f.Float(k.key)
		if !ok || !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s must be a positive number", k.key)
		}
		*k.dst = v
	}
	if typ, _ := f.String("gemma3.rope.scaling.type"); typ == "linear" {
		v, ok := f.Float("gemma3.rope.scaling.factor")
		if !ok || !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("gemma3.rope.scaling.factor missing or not a positive number (rope.scaling.type linear)")
		}
		c.RopeLinear = v
	}
	return nil
}

func gemma3ToGGUF(c *Config) []gguf.KV {
	kv := []gguf.KV{{Key: "gemma3.attention.sliding_window", Value: gguf.U32(uint32(c.SlidingWindow))}}
	if c.RopeLinear > 0 {
		kv = append(kv, gguf.KV{Key: "gemma3.rope.scaling.type", Value: gguf.Str("linear")},
			gguf.KV{Key: "gemma3.rope.scaling.factor", Value: gguf.F32(float32(c.RopeLinear))})
	}
	if c.SlidingPattern != gemma3Pattern {
		kv = append(kv, gguf.KV{Key: gemma3PatternKey, Value: gguf.U32(uint32(c.SlidingPattern))})
	}
	if c.RopeLocalTheta != gemma3LocalTheta {
		kv = append(kv, gguf.KV{Key: gemma3LocalKey, Value: gguf.F32(float32(c.RopeLocalTheta))})
	}
	if c.AttnScalar != gemma3LlamaCppScalar(c) {
		kv = append(kv, gguf.KV{Key: gemma3ScalarKey, Value: gguf.F32(float32(c.AttnScalar))})
	}
	return kv
}

// gemma3FromHF reads config.json's Gemma 3 fields and refuses what the block does not have.
func gemma3FromHF(hc *hfdir.Config, c *Config) error {
	if v, ok := hc.Raw["tie_word_embeddings"]; ok && v == false {
		return fmt.Errorf("config.json tie_word_embeddings = false: Gemma 3's output is the embedding")
	}
	if hc.AttentionBias {
		return fmt.Errorf("config.json attention_bias = true: Gemma 3 has no q/k/v biases")
	}
	act, ok := hc.Raw["hidden_activation"]
	if !ok || act == nil {
		act = hc.Raw["hidden_act"] // older files
	}
	if act != nil && act != "gelu_pytorch_tanh" {
		return fmt.Errorf("config.json hidden_activation = %v: only gelu_pytorch_tanh is supported", act)
	}
	for _, k := range []string{"attn_logit_softcapping", "final_logit_softcapping"} {
		if v, ok := hc.Raw[k]; ok && v != nil {
			return fmt.Errorf("config.json %s = %v: Gemma 3 has no soft-capping (null)", k, v)
		}
	}
	num := func(key string, dst *float64) error {
		v, ok := hc.Raw[key]
		if !ok || v == nil {
			return nil
		}
		n, isNum := v.(json.Number)
		f, err := n.Float64()
		if !isNum || err != nil || !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("config.json %s = %v is not a positive number", key, v)
		}
		*dst = f
		return nil
	}
	w := float64(c.SlidingWindow)
	if err := num("sliding_window", &w); err != nil {
		return err
	}
	if w != math.Trunc(w) || w > 1<<31 {
		return fmt.Errorf("config.json sliding_window = %v is not a window size", w)
	}
	c.SlidingWindow = int(w)
	c.AttnScalar = 256 // transformers' Gemma3TextConfig default
	if err := num("query_pre_attn_scalar", &c.AttnScalar); err != nil {
		return err
	}
	if err := num("rope_local_base_freq", &c.RopeLocalTheta); err != nil {
		return err
	}
	p := float64(c.SlidingPattern)
	if err := num("sliding_window_pattern", &p); err != nil {
		return err
	}
	if p != math.Trunc(p) || p > MaxLayers+1 {
		return fmt.Errorf("config.json sliding_window_pattern = %v is not a layer period", p)
	}
	c.SlidingPattern = int(p)
	if err := gemma3LayerTypes(hc, c); err != nil {
		return err
	}
	if rs := hc.RopeScaling; rs != nil && rs.Type != "default" {
		if rs.Type != "linear" {
			return fmt.Errorf("config.json rope_scaling type %q is not supported for gemma3 (linear)", rs.Type)
		}
		if !(rs.Factor > 0) || math.IsInf(rs.Factor, 0) {
			return fmt.Errorf("config.json rope_scaling.factor = %v, must be a positive number", rs.Factor)
		}
		c.RopeLinear = rs.Factor
	}
	return nil
}

// gemma3LayerTypes checks newer transformers' layer_types ("sliding_attention" or
// "full_attention" per layer) against a period: global at (l+1) % p == 0. All-sliding is
// the period Layers+1. Another arrangement is refused.
func gemma3LayerTypes(hc *hfdir.Config, c *Config) error {
	v, ok := hc.Raw["layer_types"]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok || len(list) != c.Layers {
		return fmt.Errorf("config.json layer_types = %v: want a list of %d layer types", v, c.Layers)
	}
	p := c.Layers + 1
	for l, t := range list {
		if t == "full_attention" {
			p = l + 1
			break
		}
	}
	for l, t := range list {
		want := "sliding_attention"
		if (l+1)%p == 0 {
			want = "full_attention"
		}
		if t != want {
			return fmt.Errorf("config.json layer_types[%d] = %v: only a global layer every %d-th (sliding_window_pattern) is supported", l, t, p)
		}
	}
	if _, given := hc.Raw["sliding_window_pattern"]; given && p != c.SlidingPattern {
		return fmt.Errorf("config.json layer_types (a global layer every %d-th) and sliding_window_pattern = %d disagree", p, c.SlidingPattern)
	}
	c.SlidingPattern = p
	return nil
}

// gemma3ToHF writes config.json's Gemma 3 fields (both sliding_window_pattern and
// layer_types, for older and newer transformers).
func gemma3ToHF(c *Config, hc *hfdir.Config) {
	hc.HeadDim, hc.TieWordEmbeddings = c.HeadDim, true
	hc.Raw["hidden_activation"] = "gelu_pytorch_tanh"
	hc.Raw["hidden_act"] = "gelu_pytorch_tanh" // older files' name
	hc.Raw["sliding_window"] = c.SlidingWindow
	hc.Raw["sliding_window_pattern"] = c.SlidingPattern
	types := make([]string, c.Layers)
	for l := range types {
		types[l] = "sliding_attention"
		if (l+1)%c.SlidingPattern == 0 {
			types[l] = "full_attention"
		}
	}
	hc.Raw["layer_types"] = types
	hc.Raw["rope_local_base_freq"] = c.RopeLocalTheta
	hc.Raw["query_pre_attn_scalar"] = c.AttnScalar
	hc.Raw["attn_logit_softcapping"], hc.Raw["final_logit_softcapping"] = nil, nil
	if c.RopeLinear > 0 {
		hc.RopeScaling = &hfdir.RopeScaling{Type: "linear", Factor: c.RopeLinear}
	}
}
