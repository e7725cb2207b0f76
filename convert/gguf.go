// This file implements WriteGGUF: a Plan as a GGUF v3 file with llama.cpp's metadata keys
// (general.*, <arch>.*, tokenizer.ggml.*, tokenizer.chat_template, general.sampling.*). Llama
// 3 rope scaling is written the way llama.cpp's converter writes it: as a rope_freqs.weight
// tensor of per-frequency divisors.
package convert

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Keys under which WriteGGUF records Llama 3 rope scaling parameters.
const (
	ropeKeyFactor = "llmcloud.rope_scaling.llama3.factor"
	ropeKeyLow    = "llmcloud.rope_scaling.llama3.low_freq_factor"
	ropeKeyHigh   = "llmcloud.rope_scaling.llama3.high_freq_factor"
	ropeKeyOrig   = "llmcloud.rope_scaling.llama3.original_max_position_embeddings"
)

// ropeScalingFromMeta reads the keys above from GGUF metadata.
func ropeScalingFromMeta(kvs []gguf.KV) *model.RopeScaling {
	f := &gguf.File{KVs: kvs}
	r := &model.RopeScaling{}
	var ok [4]bool
	r.Factor, ok[0] = f.Float(ropeKeyFactor)
	r.LowFreqFactor, ok[1] = f.Float(ropeKeyLow)
	r.HighFreqFactor, ok[2] = f.Float(ropeKeyHigh)
	var orig uint64
	orig, ok[3] = f.Uint(ropeKeyOrig)
	r.OriginalMaxPositions = int(orig)
	if ok != [4]bool{true, true, true, true} {
		return nil
	}
	return r
}

// WriteGGUF writes p to path as GGUF.
func WriteGGUF(path string, p *Plan, opts Options) error {
	c := p.Config
	if err := c.Validate(); err != nil {
		return fmt.Errorf("convert: %s: %w", path, err)
	}
	tensors := p.Tensors
	if c.RopeScaling != nil && !hasTensor(tensors, model.RopeFreqsName) {
		f, err := kernels.Llama3Factors(c.HeadDim, c.RopeTheta, *c.RopeScaling)
		if err != nil {
			return fmt.Errorf("convert: %s: %w", path, err)
		}
		rf := &tensor.Tensor{Name: model.RopeFreqsName, Type: tensor.F32, Shape: []int{len(f)}, Data: f32Bytes(f)}
		tensors = append([]Tensor{{Name: rf.Name, Type: rf.Type, Shape: rf.Shape,
			Load: func() (*tensor.Tensor, error) { return rf, nil }}}, tensors...)
	}
	opts.layers, opts.tiedOutput = c.Layers, !hasTensor(tensors, "output.weight")
	var outs []outTensor
	var weightTypes []tensor.DType
	for i := range tensors {
		t := &tensors[i]
		dt, err := outType(t, &opts, false)
		if err != nil {
			return err
		}
		if len(t.Shape) >= 2 {
			weightTypes = append(weightTypes, dt)
		}
		gen := converted(t, dt, nil)
		if opts.Quantize != nil && dt.Quantized() && len(t.Shape) == 2 {
			gen = quantizedBy(t, dt, opts.Quantize, gen)
		}
		outs = append(outs, outTensor{Name: t.Name, Type: dt, Shape: t.Shape, Gen: gen})
	}
	name := p.Name
	if opts.Name != "" {
		name = opts.Name
	}
	ftype := fileType(weightTypes)
	if opts.Type == mixQ4KM {
		ftype = 15 // LLAMA_FTYPE_MOSTLY_Q4_K_M
	}
	kvs, err := ggufMeta(p, name, ftype)
	if err != nil {
		return fmt.Errorf("convert: %s: %w", path, err)
	}
	return writeGGUFStream(path, kvs, outs)
}

// quantizedBy is the generator of t's bytes through q, falling back to rtn where q declines.
func quantizedBy(t *Tensor, dt tensor.DType, q func(string, *tensor.Tensor, tensor.DType) ([]byte, error), rtn func() ([]byte, error)) func() ([]byte, error) {
	return func() ([]byte, error) {
		src, err := t.Load()
		if err != nil {
			return nil, err
		}
		data, err := q(t.Name, src, dt)
		if err != nil {
			return nil, fmt.Errorf("convert: %s: %w", t.Name, err)
		}
		if data == nil {
			return rtn()
		}
		return data, nil
	}
}

func hasTensor(ts []Tensor, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ggufMeta builds the metadata of p in llama.cpp's key order.
func ggufMeta(p *Plan, name string, ftype uint32) ([]gguf.KV, error) {
	c := p.Config
	a := c.Arch
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.Str(a)},
		{Key: "general.name", Value: gguf.Str(name)},
		{Key: "general.file_type", Value: gguf.U32(ftype)},
	}
	add := func(k string, v gguf.Value) { kv = append(kv, gguf.KV{Key: k, Value: v}) }
	if c.CtxLen > 0 {
		add(a+".context_length", gguf.U32(uint32(c.CtxLen)))
	}
	add(a+".embedding_length", gguf.U32(uint32(c.Dim)))
	add(a+".feed_forward_length", gguf.U32(uint32(c.FFN)))
	add(a+".block_count", gguf.U32(uint32(c.Layers)))
	add(a+".attention.head_count", gguf.U32(uint32(c.Heads)))
	add(a+".attention.head_count_kv", gguf.U32(uint32(c.KVHeads)))
	if c.HeadDim*c.Heads != c.Dim {
		add(a+".attention.key_length", gguf.U32(uint32(c.HeadDim)))
		add(a+".attention.value_length", gguf.U32(uint32(c.HeadDim)))
	}
	add(a+".rope.dimension_count", gguf.U32(uint32(c.HeadDim)))
	add(a+".rope.freq_base", gguf.F32(float32(c.RopeTheta)))
	add(a+".attention.layer_norm_rms_epsilon", gguf.F32(c.NormEps))
	if c.Experts > 0 {
		add(a+".expert_count", gguf.U32(uint32(c.Experts)))
		add(a+".expert_used_count", gguf.U32(uint32(c.ExpertsUsed)))
	}
	if r := c.RopeScaling; r != nil {
		// llama.cpp has no keys for Llama 3 scaling (rope_freqs.weight carries it); these let
		// a GGUF -> Hugging Face conversion write rope_scaling back. llama.cpp ignores them.
		add(ropeKeyFactor, gguf.F64(r.Factor))
		add(ropeKeyLow, gguf.F64(r.LowFreqFactor))
		add(ropeKeyHigh, gguf.F64(r.HighFreqFactor))
		add(ropeKeyOrig, gguf.U32(uint32(r.OriginalMaxPositions)))
	}
	if f := c.Family(); f != nil && f.ToGGUF != nil {
		// A family's key replaces a shared one of the same name (deepseek2's value_length and
		// rope.dimension_count) where it stands.
		at := map[string]int{}
		for i, e := range kv {
			at[e.Key] = i
		}
		for _, e := range f.ToGGUF(&c) {
			if i, ok := at[e.Key]; ok {
				kv[i] = e
				continue
			}
			kv = append(kv, e)
		}
	}
	if float64(float32(c.RopeTheta)) != c.RopeTheta {
		return nil, fmt.Errorf("rope theta %v is not exactly representable as GGUF's float32", c.RopeTheta)
	}
	if v := p.Vocab; v != nil {
		tk, err := vocabMeta(v)
		if err != nil {
			return nil, err
		}
		kv = append(kv, tk...)
	}
	if p.ChatTemplate != "" {
		add("tokenizer.chat_template", gguf.Str(p.ChatTemplate))
	}
	kv = append(kv, p.Defaults.GGUFMeta()...) // general.sampling.*, as llama.cpp's converter
	return kv, nil
}

// vocabMeta is the tokenizer.ggml.* keys of v.
func vocabMeta(v *tokenizer.Vocab) ([]gguf.KV, error) {
	if v.Model != "llama" && v.Model != "t5" && v.Model != "gpt2" && v.Model != "bert" {
		return nil, fmt.Errorf("tokenizer model %q cannot be written to GGUF", v.Model)
	}
	n := len(v.Tokens)
	kv := []gguf.KV{{Key: "tokenizer.ggml.model", Value: gguf.Str(v.Model)}}
	add := func(k string, val gguf.Value) { kv = append(kv, gguf.KV{Key: k, Value: val}) }
	if v.Pre != "" {
		add("tokenizer.ggml.pre", gguf.Str(v.Pre))
	}
	add("tokenizer.ggml.tokens", gguf.StrArray(v.Tokens))
	if v.Scores != nil || v.Model == "llama" || v.Model == "t5" {
		s := v.Scores
		if s == nil {
			s = make([]float32, n)
		}
		add("tokenizer.ggml.scores", gguf.F32Array(s))
	}
	types := v.Types
	if types == nil {
		types = make([]int32, n)
		for i := range types {
			types[i] = tokenizer.TypeNormal
		}
	}
	add("tokenizer.ggml.token_type", gguf.I32Array(types))
	if v.Model == "gpt2" {
		add("tokenizer.ggml.merges", gguf.StrArray(v.Merges))
	}
	for _, id := range []struct {
		key string
		id  int
	}{{"bos_token_id", v.BOS}, {"eos_token_id", v.EOS}, {"unknown_token_id", v.UNK},
		{"padding_token_id", v.PAD}, {"eot_token_id", v.EOT}} {
		if id.id >= 0 {
			add("tokenizer.ggml."+id.key, gguf.U32(uint32(id.id)))
		}
	}
	add("tokenizer.ggml.add_bos_token", gguf.Bool(v.AddBOS))
	add("tokenizer.ggml.add_eos_token", gguf.Bool(v.AddEOS))
	if v.Model == "llama" || v.Model == "t5" {
		add("tokenizer.ggml.add_space_prefix", gguf.Bool(v.AddSpacePrefix))
	}
	return kv, nil
}

func f32Bytes(f []float32) []byte {
	b := make([]byte, 4*len(f))
	for i, x := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
