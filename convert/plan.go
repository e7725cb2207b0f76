// This file implements Plan, the format-neutral description of a model to write (config,
// vocabulary, chat template, defaults and lazily produced tensors under GGUF names, in the
// model's own layout), FromBundle, and the choice of each tensor's output type.
package convert

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Tensor is one tensor of a Plan: GGUF name, source type and shape, and Load, which returns
// its data in that type (q/k rows in GGUF's adjacent-pair order for llama/mistral).
type Tensor struct {
	Name  string
	Type  tensor.DType
	Shape []int
	Load  func() (*tensor.Tensor, error)
}

// Plan is everything a writer needs.
type Plan struct {
	Name         string
	Config       model.Config
	Vocab        *tokenizer.Vocab // nil: no tokenizer is written
	ChatTemplate string
	Defaults     loader.Defaults
	Tensors      []Tensor
}

// Options select the output.
type Options struct {
	// Type is the weight type: "" keeps each tensor's type (dequantizing to F32 where the
	// output format cannot hold it), else f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, or q4_k_m
	// (llama-quantize's Q4_K_M mix of Q4_K and Q6_K, see mix.go). Vectors
	// (norms, biases) are always written as F32.
	Type string
	// Name overrides the model name (general.name).
	Name string
	// ShardBytes is the largest safetensors shard of a Hugging Face output (0: 5 GB).
	ShardBytes int64
	// Warn receives warnings (e.g. a fallback type); nil discards them.
	Warn func(msg string)
	// Quantize, when set, encodes a 2-D tensor whose output type dt is block-quantized (GGUF
	// output; package quant's calibrated methods): it returns the tensor's bytes in dt, or nil
	// and no error to leave it to the reference round-to-nearest quantizers.
	Quantize func(name string, src *tensor.Tensor, dt tensor.DType) ([]byte, error)

	layers     int  // set by the writers for the q4_k_m mix
	tiedOutput bool // no output.weight: token_embd.weight is the output
}

func (o *Options) warnf(format string, a ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, a...))
	}
}

// weightType parses Type; keep is true when it is empty.
func (o *Options) weightType() (dt tensor.DType, keep bool, err error) {
	if o.Type == "" {
		return tensor.F32, true, nil
	}
	if o.Type == mixQ4KM {
		return tensor.Q4_K, false, nil // refined per tensor by q4kmType
	}
	dt, err = tensor.Parse(o.Type)
	if err != nil || dt == tensor.I32 {
		return 0, false, fmt.Errorf("convert: unknown weight type %q (f32, f16, bf16, q8_0, q4_0, q4_k, q4_k_m, q6_k)", o.Type)
	}
	return dt, false, nil
}

// FromBundle describes an opened model. Tensors alias the bundle's files: keep it open until
// the plan is written. A tied llama2.c model gets an explicit output.weight (a copy of the
// embedding), as llama.cpp's llama2.c converter writes it.
func FromBundle(b *loader.Bundle) *Plan {
	m := b.Model
	p := &Plan{Name: b.Name, Config: m.Config, ChatTemplate: b.ChatTemplate, Defaults: b.Defaults}
	if b.Tok != nil {
		p.Vocab = b.Tok.Vocab()
	}
	ws := m.Weights
	if p.Config.RopeScaling == nil && b.Format == loader.GGUF {
		p.Config.RopeScaling = ropeScalingFromMeta(b.Meta)
	}
	if b.Format == loader.Llama2C && m.Config.Tied {
		if _, ok := ws["output.weight"]; !ok {
			ws = make(map[string]*tensor.Tensor, len(m.Weights)+1)
			for k, v := range m.Weights {
				ws[k] = v
			}
			e := ws["token_embd.weight"]
			ws["output.weight"] = &tensor.Tensor{Name: "output.weight", Type: e.Type, Shape: e.Shape, Data: e.Data}
			p.Config.Tied = false
		}
	}
	for _, name := range OrderNames(ws) {
		t := ws[name]
		p.Tensors = append(p.Tensors, Tensor{Name: name, Type: t.Type, Shape: t.Shape,
			Load: func() (*tensor.Tensor, error) { return t, nil }})
	}
	return p
}

// blockOrder is the order of a block's tensors in the files llmcloud writes (llama.cpp's
// llama2.c converter order, with the optional tensors next to their relatives).
var blockOrder = []string{"attn_qkv.weight", "attn_q.weight", "attn_q.bias", "attn_k.weight", "attn_k.bias",
	"attn_v.weight", "attn_v.bias", "attn_q_norm.weight", "attn_k_norm.weight", "attn_output.weight",
	"attn_norm.weight", "ffn_gate_inp.weight", "ffn_gate.weight", "ffn_gate_exps.weight", "ffn_down.weight",
	"ffn_down_exps.weight", "ffn_up.weight", "ffn_up_exps.weight", "ffn_gate_inp_shexp.weight", "ffn_gate_shexp.weight",
	"ffn_down_shexp.weight", "ffn_up_shexp.weight", "ffn_norm.weight"}

// OrderNames sorts GGUF tensor names: rope_freqs, token_embd, output_norm, output, then each
// block in blockOrder, then anything else by name.
func OrderNames[T any](ws map[string]T) []string {
	rank := func(n string) (int, int) {
		switch n {
		case model.RopeFreqsName:
			return -4, 0
		case "token_embd.weight":
			return -3, 0
		case "output_norm.weight":
			return -2, 0
		case "output.weight":
			return -1, 0
		}
		if rest, ok := strings.CutPrefix(n, "blk."); ok {
			if i := strings.IndexByte(rest, '.'); i > 0 {
				if l, err := strconv.Atoi(rest[:i]); err == nil {
					for j, s := range blockOrder {
						if rest[i+1:] == s {
							return l, j
						}
					}
				}
			}
		}
		return 1 << 30, 0
	}
	names := make([]string, 0, len(ws))
	for n := range ws {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a1, a2 := rank(names[i])
		b1, b2 := rank(names[j])
		if a1 != b1 {
			return a1 < b1
		}
		if a2 != b2 {
			return a2 < b2
		}
		return names[i] < names[j]
	})
	return names
}

// outType picks the output type of one tensor. floatOnly is set for formats that cannot hold
// block-quantized data.
func outType(t *Tensor, opts *Options, floatOnly bool) (tensor.DType, error) {
	want, keep, err := opts.weightType()
	if err != nil {
		return 0, err
	}
	if opts.Type == mixQ4KM && len(t.Shape) >= 2 {
		want = q4kmType(t.Name, opts.layers, opts.tiedOutput)
	}
	if len(t.Shape) < 2 || strings.HasSuffix(t.Name, ".bias") { // biases stay F32 (gpt-oss's experts' [E,F])
		if keep && floatOnly && !t.Type.Quantized() {
			return t.Type, nil
		}
		return tensor.F32, nil
	}
	if !keep && strings.HasSuffix(t.Name, ".ffn_gate_inp.weight") {
		// A mixture of experts' router stays F32, as llama.cpp's converter and llama-quantize
		// keep it: a few rows that decide which experts run.
		return tensor.F32, nil
	}
	if keep {
		want = t.Type
		if floatOnly && want.Quantized() {
			opts.warnf("%s: %s cannot be stored in this format, writing F32", t.Name, want)
			want = tensor.F32
		}
		if _, z := tensor.ZeroBase(want); z { // HF AWQ/GPTQ (GGUF has no such type): F32, exact
			opts.warnf("%s: %s (an AWQ/GPTQ weight) has no GGUF type, writing F32", t.Name, want)
			want = tensor.F32
		}
	}
	if floatOnly && want.Quantized() {
		return 0, fmt.Errorf("convert: weight type %s: Hugging Face safetensors output holds only f32, f16 or bf16", want)
	}
	cols := t.Shape[len(t.Shape)-1]
	if want.Quantized() && cols%want.BlockElems() != 0 {
		fb := tensor.F16
		if (want == tensor.Q4_K || want == tensor.Q6_K) && cols%tensor.Q8_0.BlockElems() == 0 {
			fb = tensor.Q8_0
		}
		opts.warnf("%s: rows of %d are not a multiple of %s's block of %d, using %s", t.Name, cols, want, want.BlockElems(), fb)
		want = fb
	}
	return want, nil
}

// converted returns a generator of t's data in type dt.
func converted(t *Tensor, dt tensor.DType, transform func(*tensor.Tensor) (*tensor.Tensor, error)) func() ([]byte, error) {
	return func() ([]byte, error) {
		src, err := t.Load()
		if err != nil {
			return nil, err
		}
		if transform != nil {
			if src, err = transform(src); err != nil {
				return nil, err
			}
		}
		if src.Type == dt {
			return src.Data, nil
		}
		return convertRows(src, dt)
	}
}

// convertRows converts src to dt one row at a time (the same result as tensor.Convert, whose
// blocks run along rows, without a float32 copy of the whole tensor).
func convertRows(src *tensor.Tensor, dt tensor.DType) ([]byte, error) {
	if err := src.Check(); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	rows, cols := src.Rows(), src.Cols()
	rb, err := dt.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", src.Name, err)
	}
	out := make([]byte, rows*rb)
	if _, ok := tensor.ZeroBase(src.Type); ok { // HF AWQ/GPTQ weights: rows need their corrections
		vals, err := src.Float32()
		if err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
		if err := tensor.QuantizeRow(dt, vals, out); err != nil {
			return nil, fmt.Errorf("convert: %s: %w", src.Name, err)
		}
		return out, nil
	}
	buf := make([]float32, cols)
	for r := 0; r < rows; r++ {
		if err := tensor.DequantizeRow(src.Type, src.RowData(r), buf); err != nil {
			return nil, fmt.Errorf("convert: %s: %w", src.Name, err)
		}
		if err := tensor.QuantizeRow(dt, buf, out[r*rb:(r+1)*rb]); err != nil {
			return nil, fmt.Errorf("convert: %s: %w", src.Name, err)
		}
	}
	return out, nil
}

// fileType is general.file_type (llama.cpp's LLAMA_FTYPE_*) for the dominant weight type.
func fileType(types []tensor.DType) uint32 {
	count := map[tensor.DType]int{}
	best, n := tensor.F32, 0
	for _, t := range types {
		count[t]++
		if count[t] > n {
			best, n = t, count[t]
		}
	}
	switch best {
	case tensor.F16:
		return 1
	case tensor.Q4_0:
		return 2
	case tensor.Q8_0:
		return 7
	case tensor.Q4_K:
		return 15 // Q4_K_M, what llama-quantize reports for an all-Q4_K file
	case tensor.Q6_K:
		return 18
	case tensor.BF16:
		return 32
	}
	return 0
}

// Write writes p in the format OUT's name asks for: *.gguf is GGUF, *.bin a llama2.c
// checkpoint, anything else a Hugging Face directory.
func Write(out string, p *Plan, opts Options) error {
	switch {
	case strings.HasSuffix(out, ".gguf"):
		return WriteGGUF(out, p, opts)
	case strings.HasSuffix(out, ".bin"):
		return WriteLlama2C(out, p, opts)
	}
	return WriteHF(out, p, opts)
}
