// This file implements the GGUF loader: metadata keys to Config (the hyper-parameter keys every
// llama.cpp architecture shares, then the family's hooks), tensors by their GGUF names.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/tensor"
)

// ConfigFromGGUF reads the hyper-parameters of a GGUF file of a registered family: the keys
// <arch>.embedding_length, block_count, feed_forward_length, attention.head_count(_kv),
// attention.key_length, context_length, rope.freq_base, attention.layer_norm_rms_epsilon,
// Vocab from token_embd.weight and Tied from the absence of output.weight; then the
// family's Fix and FromGGUF (the Llama family: QKVBias and QKNorm from the presence of
// blk.0.attn_q.bias and blk.0.attn_q_norm.weight).
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	c, err := configFromGGUF(f)
	if err != nil {
		return c, fmt.Errorf("model: %s: %w", f.Path, err)
	}
	return c, nil
}

func configFromGGUF(f *gguf.File) (Config, error) {
	var c Config
	arch, ok := f.String("general.architecture")
	if !ok {
		return c, fmt.Errorf("general.architecture missing")
	}
	c.Arch = arch
	// Before the architecture: absurd expert counts are refused as such.
	var err error
	if c.Experts, c.ExpertsUsed, err = ggufExperts(f, arch); err != nil {
		return c, err
	}
	fam := FamilyOf(arch)
	if fam == nil && c.Experts > 0 {
		return c, fmt.Errorf("unsupported architecture %q (a mixture of experts, %s.expert_count = %d)", arch, arch, c.Experts)
	}
	if fam == nil {
		return c, fmt.Errorf("unsupported architecture %q", arch)
	}
	need := func(key string) (int, error) {
		v, ok := f.Uint(arch + "." + key)
		if !ok {
			return 0, fmt.Errorf("%s.%s missing", arch, key)
		}
		if v == 0 || v > 1<<31 {
			return 0, fmt.Errorf("%s.%s = %d out of range", arch, key, v)
		}
		return int(v), nil
	}
	if c.Dim, err = need("embedding_length"); err != nil {
		return c, err
	}
	if c.Layers, err = need("block_count"); err != nil {
		return c, err
	}
	if c.FFN, err = need("feed_forward_length"); err != nil {
		return c, err
	}
	if c.Heads, err = need("attention.head_count"); err != nil {
		return c, err
	}
	c.KVHeads = c.Heads
	if _, ok := f.Uint(arch + ".attention.head_count_kv"); ok {
		if c.KVHeads, err = need("attention.head_count_kv"); err != nil {
			return c, err
		}
	}
	c.HeadDim = c.Dim / c.Heads
	if _, ok := f.Uint(arch + ".attention.key_length"); ok {
		if c.HeadDim, err = need("attention.key_length"); err != nil {
			return c, err
		}
	}
	if v, ok := f.Uint(arch + ".context_length"); ok {
		// Any length up to 2^40 is accepted (it never sizes memory: see engine.DefaultMaxModelLen).
		if v > 1<<40 {
			return c, fmt.Errorf("%s.context_length = %d out of range", arch, v)
		}
		c.CtxLen = int(v)
	}
	c.RopeTheta = 10000
	if v, ok := f.Float(arch + ".rope.freq_base"); ok {
		c.RopeTheta = v
	}
	c.NormEps = 1e-5
	if v, ok := f.Float(arch + ".attention.layer_norm_rms_epsilon"); ok {
		c.NormEps = float32(v)
	}
	scaling, _ := f.String(arch + ".rope.scaling.type")
	if scaling != "" && scaling != "none" && scaling != "llama3" && scaling != "linear" && scaling != "yarn" {
		return c, fmt.Errorf("%s.rope.scaling.type %q is not supported", arch, scaling)
	}
	embd, ok := f.Tensor("token_embd.weight")
	if !ok || len(embd.Shape) != 2 {
		return c, fmt.Errorf("token_embd.weight missing or not 2-D")
	}
	c.Vocab = embd.Shape[0]
	_, hasOut := f.Tensor("output.weight")
	c.Tied = !hasOut
	if fam.Fix != nil {
		fam.Fix(&c)
	}
	if fam.FromGGUF != nil {
		if err := fam.FromGGUF(f, &c); err != nil {
			return c, err
		}
	}
	if scaling == "linear" && c.RopeLinear == 0 { // a family that reads it sets RopeLinear (gemma3)
		return c, fmt.Errorf("%s.rope.scaling.type \"linear\" is not supported for %s", arch, arch)
	}
	if scaling == "yarn" && c.Yarn == nil {
		return c, fmt.Errorf("%s.rope.scaling.type \"yarn\" is not supported for %s (deepseek2, gpt-oss only)", arch, arch)
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	if v, ok := f.Uint(arch + ".rope.dimension_count"); ok && v != uint64(c.HeadDim) && c.KVLoraRank == 0 {
		return c, fmt.Errorf("%s.rope.dimension_count = %d, partial rotary (head dim %d) is not supported", arch, v, c.HeadDim)
	}
	return c, nil
}

// LoadGGUF builds a Model whose tensors alias f's mapping: keep f open while using it.
func LoadGGUF(f *gguf.File) (*Model, error) {
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	ws := make(map[string]*tensor.Tensor, len(f.Tensors))
	for i := range f.Tensors {
		ws[f.Tensors[i].Name] = &f.Tensors[i]
	}
	m, err := New(cfg, ws)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return m, nil
}

// OpenGGUF opens path and loads it; Close the model to release the file.
func OpenGGUF(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := LoadGGUF(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	m.closer = f.Close
	return m, nil
}
