// This file implements Config: the fields of a llama / mistral / qwen2 / qwen3 config.json,
// with the defaults transformers applies and validation of the model shape.
package hfdir

import (
	"fmt"
	"os"
)

// Config holds the fields of config.json that llmcloud uses; Raw holds everything.
type Config struct {
	Architectures []string
	ModelType     string

	HiddenSize        int
	IntermediateSize  int
	NumHiddenLayers   int
	NumAttentionHeads int
	NumKeyValueHeads  int // num_key_value_heads; NumAttentionHeads when absent
	HeadDim           int // head_dim; 0 when absent (then HiddenSize/NumAttentionHeads)

	VocabSize             int
	MaxPositionEmbeddings int // 0 when absent

	RMSNormEps  float64      // rms_norm_eps; 1e-6 (the transformers default) when absent
	RopeTheta   float64      // rope_theta (or rope_parameters.rope_theta); 10000 when absent
	RopeScaling *RopeScaling // rope_scaling; nil when absent or null

	TieWordEmbeddings bool // tie_word_embeddings; false when absent
	AttentionBias     bool // attention_bias as written; false when absent (qwen2 has q/k/v biases without this key)

	BOSTokenID  *int
	EOSTokenIDs []int // eos_token_id, an integer or a list

	TorchDtype string // torch_dtype (or dtype, its newer name), e.g. "bfloat16"

	Raw map[string]any // every field of the file, numbers as json.Number
}

// RopeScaling is config.json's rope_scaling object.
type RopeScaling struct {
	Type                          string  // rope_type, or type in older files: linear, dynamic, yarn, llama3, longrope, default
	Factor                        float64 // factor; 0 when absent
	LowFreqFactor                 float64 // llama3
	HighFreqFactor                float64 // llama3
	OriginalMaxPositionEmbeddings int     // llama3, yarn
	Raw                           map[string]any
}

// HeadDimension is HeadDim, or HiddenSize/NumAttentionHeads when head_dim is absent.
func (c *Config) HeadDimension() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads == 0 {
		return 0
	}
	return c.HiddenSize / c.NumAttentionHeads
}

// ReadConfig reads and validates one config.json.
func ReadConfig(path string) (*Config, error) {
	m, err := readObject(path)
	if err != nil {
		return nil, err
	}
	return configFrom(m, path)
}

// configFrom reads the typed fields of a decoded config.json.
func configFrom(m map[string]any, file string) (*Config, error) {
	o := &obj{file: file, m: m}
	c := &Config{Raw: m}
	c.Architectures = o.strings("architectures")
	c.ModelType, _ = o.str("model_type")
	required := func(key string) int {
		v, ok := o.int(key)
		if !ok && o.err == nil {
			o.failf(key, "required field is missing")
		}
		return v
	}
	c.HiddenSize = required("hidden_size")
	c.IntermediateSize = required("intermediate_size")
	c.NumHiddenLayers = required("num_hidden_layers")
	c.NumAttentionHeads = required("num_attention_heads")
	c.VocabSize = required("vocab_size")
	c.NumKeyValueHeads = c.NumAttentionHeads
	if v, ok := o.int("num_key_value_heads"); ok {
		c.NumKeyValueHeads = v
	}
	c.HeadDim, _ = o.int("head_dim")
	c.MaxPositionEmbeddings, _ = o.int("max_position_embeddings")
	c.RMSNormEps = 1e-6
	if v, ok := o.float("rms_norm_eps"); ok {
		c.RMSNormEps = v
	}
	c.RopeTheta = 10000
	if v, ok := o.float("rope_theta"); ok {
		c.RopeTheta = v
	} else if rp := o.object("rope_parameters"); rp != nil {
		if v, ok := rp.float("rope_theta"); ok {
			c.RopeTheta = v
		}
		o.adopt(rp)
	}
	if rs := o.object("rope_scaling"); rs != nil {
		c.RopeScaling = ropeScalingFrom(rs)
		o.adopt(rs)
	}
	c.TieWordEmbeddings, _ = o.boolean("tie_word_embeddings")
	c.AttentionBias, _ = o.boolean("attention_bias")
	c.BOSTokenID = o.intPtr("bos_token_id")
	c.EOSTokenIDs = o.intOrList("eos_token_id")
	if s, ok := o.str("torch_dtype"); ok {
		c.TorchDtype = s
	} else {
		c.TorchDtype, _ = o.str("dtype")
	}
	if o.err != nil {
		return nil, o.err
	}
	if err := c.validate(file); err != nil {
		return nil, err
	}
	return c, nil
}

func ropeScalingFrom(o *obj) *RopeScaling {
	r := &RopeScaling{Raw: o.m}
	if t, ok := o.str("rope_type"); ok {
		r.Type = t
	} else {
		r.Type, _ = o.str("type")
	}
	r.Factor, _ = o.float("factor")
	r.LowFreqFactor, _ = o.float("low_freq_factor")
	r.HighFreqFactor, _ = o.float("high_freq_factor")
	r.OriginalMaxPositionEmbeddings, _ = o.int("original_max_position_embeddings")
	return r
}

// validate checks the model shape; errors name file and field.
func (c *Config) validate(file string) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("hfdir: %s: field %q: %s", file, field, fmt.Sprintf(format, args...))
	}
	for _, f := range []struct {
		key string
		v   int
	}{
		{"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.NumKeyValueHeads}, {"vocab_size", c.VocabSize},
	} {
		if f.v <= 0 {
			return bad(f.key, "must be positive, got %d", f.v)
		}
	}
	if c.HeadDim < 0 {
		return bad("head_dim", "must be positive, got %d", c.HeadDim)
	}
	if c.MaxPositionEmbeddings < 0 {
		return bad("max_position_embeddings", "must not be negative, got %d", c.MaxPositionEmbeddings)
	}
	if c.HeadDim == 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		return bad("num_attention_heads", "%d does not divide hidden_size %d (and head_dim is absent)", c.NumAttentionHeads, c.HiddenSize)
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return bad("num_key_value_heads", "%d does not divide num_attention_heads %d", c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	if !(c.RMSNormEps > 0) {
		return bad("rms_norm_eps", "must be positive, got %g", c.RMSNormEps)
	}
	if !(c.RopeTheta > 0) {
		return bad("rope_theta", "must be positive, got %g", c.RopeTheta)
	}
	if c.BOSTokenID != nil && (*c.BOSTokenID < 0 || *c.BOSTokenID >= c.VocabSize) {
		return bad("bos_token_id", "%d is outside the vocabulary of %d", *c.BOSTokenID, c.VocabSize)
	}
	for _, id := range c.EOSTokenIDs {
		if id < 0 || id >= c.VocabSize {
			return bad("eos_token_id", "%d is outside the vocabulary of %d", id, c.VocabSize)
		}
	}
	if r := c.RopeScaling; r != nil {
		return r.validate(bad)
	}
	return nil
}

func (r *RopeScaling) validate(bad func(field, format string, args ...any) error) error {
	switch r.Type {
	case "", "default":
		if r.Type == "" {
			return bad("rope_scaling.rope_type", "required field is missing (neither rope_type nor type is set)")
		}
		return nil
	case "linear", "dynamic", "yarn", "llama3", "longrope", "su": // su: LongRoPE's older name (Phi-3)
	default:
		return bad("rope_scaling.rope_type", "unknown rope scaling type %q", r.Type)
	}
	if r.Type != "longrope" && r.Type != "su" && !(r.Factor > 0) {
		return bad("rope_scaling.factor", "must be positive for %s scaling, got %g", r.Type, r.Factor)
	}
	if r.Type == "llama3" {
		switch {
		case !(r.LowFreqFactor > 0):
			return bad("rope_scaling.low_freq_factor", "must be positive for llama3 scaling, got %g", r.LowFreqFactor)
		case !(r.HighFreqFactor > r.LowFreqFactor):
			return bad("rope_scaling.high_freq_factor", "must be larger than low_freq_factor %g, got %g", r.LowFreqFactor, r.HighFreqFactor)
		case r.OriginalMaxPositionEmbeddings <= 0:
			return bad("rope_scaling.original_max_position_embeddings", "must be positive for llama3 scaling, got %d", r.OriginalMaxPositionEmbeddings)
		}
	}
	return nil
}

// fileExists reports whether path names a regular file.
func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
