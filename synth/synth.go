// Package synth makes random-weight models of real shapes: weights drawn from N(0, 0.02) by a
// seeded generator (each tensor from its own stream, derived from the seed and the tensor's
// name, so the values do not depend on the order of writing), norm weights 1.0. The result is
// a convert.Plan whose tensors are generated only when the writer asks for them, so a
// multi-gigabyte model is written one tensor at a time.
package synth

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Options describe the model. Zero fields take defaults (see Plan).
type Options struct {
	Arch                                      string // a registered family's (model.FamilyOf): llama, mistral, qwen2, qwen3, gemma2
	Dim, Layers, Heads, KVHeads, HeadDim, FFN int
	Vocab, CtxLen                             int
	RopeTheta                                 float64
	NormEps                                   float32
	Tied                                      bool
	Experts, ExpertsUsed                      int     // a mixture of experts (Mixtral: arch llama); 0 = dense
	ExpertFFN, SharedFFN                      int     // an expert's and the shared expert's widths (qwen2moe)
	Std                                       float64 // the weights' standard deviation (0: 0.02)
	Seed                                      uint64
	// RopeOrigCtx > 0 gives the model LongRoPE scaling (phi3) trained at this original
	// context: made-up divisors (short ones near 1, long ones rising to CtxLen/RopeOrigCtx)
	// and llama.cpp's converter's attention factor for CtxLen.
	RopeOrigCtx int
	// The sliding window (gemma2: of the local layers; phi3: of every layer), and Gemma 2's
	// soft-caps and query_pre_attn_scalar (zero: the family's defaults).
	SlidingWindow                         int
	AttnSoftcap, FinalSoftcap, AttnScalar float64
	// gemma3: every SlidingPattern-th layer global, the local layers' RoPE base, the global
	// layers' linear RoPE scaling factor (zero: the family's defaults; no scaling).
	SlidingPattern             int
	RopeLocalTheta, RopeLinear float64
	// deepseek2: the low-rank widths of q (0: a plain attn_q) and of the KV latent, the rotated
	// part of a q/k head, a v head's width, the leading dense blocks, the routed experts'
	// weight scale, renormalised top-k and sigmoid scores (zero: the family's defaults).
	QLoraRank, KVLoraRank, RopeDim, VHeadDim, DenseLead int
	ExpertsScale                                        float64
	ExpertsNorm, ExpertsSigmoid                         bool
	// deepseek2: YaRN RoPE scaling (YarnFactor > 0: factor, original context, DeepSeek's
	// yarn_log_multiplier), V3's selection bias (random, exp_probs_b.bias) and grouped top-k.
	YarnFactor, YarnLogMul         float64
	YarnOrigCtx                    int
	ExpertsBias                    bool
	ExpertGroups, ExpertGroupsUsed int
	// ExpertType MXFP4 makes the stacked experts' weights (ffn_*_exps.weight) random MXFP4
	// blocks (gpt-oss's form; a float writer dequantizes them); 0 or F32: F32 as the rest.
	ExpertType   tensor.DType
	Name         string
	Tokenizer    *tokenizer.Vocab // nil: ByteVocab()
	ChatTemplate string
}

// Presets hold the exact shapes of well-known models.
var Presets = map[string]Options{
	"tinyllama-1.1b": {Arch: "llama", Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632, Vocab: 32000,
		CtxLen: 2048, RopeTheta: 10000, NormEps: 1e-5},
	"qwen2.5-0.5b": {Arch: "qwen2", Dim: 896, Layers: 24, Heads: 14, KVHeads: 2, FFN: 4864, Vocab: 151936,
		CtxLen: 32768, RopeTheta: 1000000, NormEps: 1e-6, Tied: true},
	"stories110m": {Arch: "llama", Dim: 768, Layers: 12, Heads: 12, KVHeads: 12, FFN: 2048, Vocab: 32000,
		CtxLen: 1024, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
	"stories15m": {Arch: "llama", Dim: 288, Layers: 6, Heads: 6, KVHeads: 6, FFN: 768, Vocab: 32000,
		CtxLen: 256, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
}

// Config resolves o's defaults: arch llama, dim 64, 2 layers, 4 heads, KV heads = heads, head
// dim = dim/heads, FFN = 4*dim (rounded up to a multiple of 32), vocab = the tokenizer's size,
// context 512, 4 experts for an architecture that is always a mixture of experts (qwen2moe),
// experts used min(2, experts) when there are experts, rope theta and eps the family's usual ones (llama 10000 and 1e-5, qwen 1e6 and
// 1e-6), and the fields the family implies (model.Family.Fix).
func (o Options) Config() (model.Config, error) {
	c := model.Config{Arch: o.Arch, Dim: o.Dim, Layers: o.Layers, Heads: o.Heads, KVHeads: o.KVHeads,
		HeadDim: o.HeadDim, FFN: o.FFN, Vocab: o.Vocab, CtxLen: o.CtxLen, RopeTheta: o.RopeTheta,
		NormEps: o.NormEps, Tied: o.Tied, Experts: o.Experts, ExpertsUsed: o.ExpertsUsed,
		ExpertFFN: o.ExpertFFN, SharedFFN: o.SharedFFN, SlidingWindow: o.SlidingWindow,
		AttnSoftcap: o.AttnSoftcap, FinalSoftcap: o.FinalSoftcap, AttnScalar: o.AttnScalar,
		SlidingPattern: o.SlidingPattern, RopeLocalTheta: o.RopeLocalTheta, RopeLinear: o.RopeLinear,
		QLoraRank: o.QLoraRank, KVLoraRank: o.KVLoraRank, RopeDim: o.RopeDim, VHeadDim: o.VHeadDim,
		DenseLead: o.DenseLead, ExpertsScale: o.ExpertsScale, ExpertsNorm: o.ExpertsNorm, ExpertsSigmoid: o.ExpertsSigmoid,
		ExpertsBias: o.ExpertsBias, ExpertGroups: o.ExpertGroups, ExpertGroupsUsed: o.ExpertGroupsUsed}
	if o.YarnFactor > 0 {
		c.Yarn = &model.Yarn{Yarn: kernels.Yarn{Factor: o.YarnFactor, OrigCtx: o.YarnOrigCtx}, LogMul: o.YarnLogMul}
	}
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Arch == "" {
		c.Arch = "llama"
	}
	def(&c.Dim, 64)
	def(&c.Layers, 2)
	def(&c.Heads, 4)
	def(&c.KVHeads, c.Heads)
	if c.Heads > 0 {
		def(&c.HeadDim, c.Dim/c.Heads)
	}
	def(&c.FFN, (4*c.Dim+31)/32*32)
	def(&c.CtxLen, 512)
	if fam := c.Family(); fam != nil && fam.ExpertsOnly {
		def(&c.Experts, 4)
	}
	if c.Experts > 0 {
		def(&c.ExpertsUsed, min(2, c.Experts))
	}
	if c.Vocab == 0 {
		c.Vocab = len(o.vocab().Tokens)
	}
	if fam := c.Family(); fam != nil { // otherwise Validate reports the architecture
		if c.RopeTheta == 0 {
			c.RopeTheta = fam.RopeTheta
		}
		if c.NormEps == 0 {
			c.NormEps = fam.NormEps
		}
		if fam.Fix != nil {
			fam.Fix(&c)
		}
		for _, f := range []struct {
			name      string
			asked, is float64
		}{{"attn_logit_softcapping", o.AttnSoftcap, c.AttnSoftcap}, {"final_logit_softcapping", o.FinalSoftcap, c.FinalSoftcap}} {
			if f.asked != 0 && f.asked != f.is {
				return c, fmt.Errorf("synth: %s = %v: architecture %s has no soft-capping", f.name, f.asked, c.Arch)
			}
		}
		if o.RopeOrigCtx > 0 {
			if fam.ConfigTensors == nil {
				return c, fmt.Errorf("synth: RopeOrigCtx: architecture %s has no LongRoPE scaling", c.Arch)
			}
			c.LongRope = longRope(c.HeadDim, c.CtxLen, o.RopeOrigCtx)
		}
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("synth: %w", err)
	}
	if !(o.Std >= 0) || math.IsInf(o.Std, 0) {
		return c, fmt.Errorf("synth: Std = %v, must be a non-negative number", o.Std)
	}
	if n := len(o.vocab().Tokens); n > c.Vocab {
		return c, fmt.Errorf("synth: the tokenizer has %d tokens, more than the vocabulary size %d", n, c.Vocab)
	}
	return c, nil
}

func (o Options) vocab() *tokenizer.Vocab {
	if o.Tokenizer != nil {
		return o.Tokenizer
	}
	return ByteVocab()
}

// Plan returns the random model as a convert.Plan (tensors in F32; the writer converts them).
func (o Options) Plan() (*convert.Plan, error) {
	c, err := o.Config()
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = fmt.Sprintf("synth-%s-%d", c.Arch, o.Seed)
	}
	p := &convert.Plan{Name: name, Config: c, Vocab: o.vocab(), ChatTemplate: o.ChatTemplate}
	shapes := c.Shapes()
	fixed := map[string]*tensor.Tensor{} // tensors the config determines (LongRoPE factors)
	if f := c.Family(); f.ConfigTensors != nil {
		for _, t := range f.ConfigTensors(&c) {
			fixed[t.Name] = t
		}
	}
	for _, n := range convert.OrderNames(shapes) {
		shape := shapes[n]
		if t := fixed[n]; t != nil {
			p.Tensors = append(p.Tensors, convert.Tensor{Name: n, Type: tensor.F32, Shape: shape,
				Load: func() (*tensor.Tensor, error) { return t, nil }})
			continue
		}
		if o.ExpertType == tensor.MXFP4 && len(shape) == 3 && strings.HasSuffix(n, "_exps.weight") {
			if shape[2]%tensor.MXFP4.BlockElems() != 0 {
				return nil, fmt.Errorf("synth: %s%v: MXFP4 experts need rows of a multiple of %d", n, shape, tensor.MXFP4.BlockElems())
			}
			p.Tensors = append(p.Tensors, convert.Tensor{Name: n, Type: tensor.MXFP4, Shape: shape,
				Load: func() (*tensor.Tensor, error) { return GenerateMXFP4(n, shape, o.Seed, o.Std), nil }})
			continue
		}
		p.Tensors = append(p.Tensors, convert.Tensor{Name: n, Type: tensor.F32, Shape: shape,
			Load: func() (*tensor.Tensor, error) { return GenerateStd(n, shape, o.Seed, o.Std), nil }})
	}
	return p, nil
}

// longRope makes LongRoPE divisors for a head dim: short ones 1 to 1.1, long ones rising
// geometrically from 1 to the context ratio (real Phi-3 factors have these shapes).
func longRope(headDim, ctxLen, origCtx int) *model.LongRope {
	half := headDim / 2
	r := &model.LongRope{OrigCtx: origCtx, AttnFactor: model.LongRopeAttnFactor(ctxLen, origCtx)}
	ratio := math.Max(float64(ctxLen)/float64(origCtx), 1)
	for i := 0; i < half; i++ {
		f := float64(i) / math.Max(float64(half-1), 1)
		r.Short = append(r.Short, float32(1+0.1*f))
		r.Long = append(r.Long, float32(math.Pow(ratio, f)))
	}
	return r
}

// Generate makes tensor name: all ones for a norm, else N(0, 0.02) from the stream of
// (seed, name).
func Generate(name string, shape []int, seed uint64) *tensor.Tensor {
	return GenerateStd(name, shape, seed, 0.02)
}

// GenerateStd is Generate with weights from N(0, std) (std 0: 0.02). Larger weights make a
// small random model's predictions (and a mixture of experts' routing) far from uniform, so
// a comparison of two runtimes on it tests more than the uniform distribution.
func GenerateStd(name string, shape []int, seed uint64, std float64) *tensor.Tensor {
	if std == 0 {
		std = 0.02
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]byte, 4*n)
	if strings.Contains(name, "norm") {
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(1))
		}
	} else {
		h := fnv.New64a()
		h.Write([]byte(name))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64()*std)))
		}
	}
	return &tensor.Tensor{Name: name, Type: tensor.F32, Shape: append([]int(nil), shape...), Data: data}
}

// GenerateMXFP4 makes tensor name as random MXFP4 blocks (shape's last axis a multiple of 32):
// uniform nibbles under one E8M0 scale per block near std/2.25 (std 0: 0.02), so the values'
// spread is near std's; from the stream of (seed, name).
func GenerateMXFP4(name string, shape []int, seed uint64, std float64) *tensor.Tensor {
	if std == 0 {
		std = 0.02
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	blocks := n / tensor.MXFP4.BlockElems()
	e := 127 + int(math.Round(math.Log2(std/2.25)))
	e = min(254, max(1, e))
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	data := make([]byte, blocks*tensor.MXFP4.BlockBytes())
	for b := 0; b < blocks; b++ {
		blk := data[b*17 : (b+1)*17]
		blk[0] = byte(e + rng.IntN(3) - 1)
		for j := 1; j < 17; j++ {
			blk[j] = byte(rng.IntN(256))
		}
	}
	return &tensor.Tensor{Name: name, Type: tensor.MXFP4, Shape: append([]int(nil), shape...), Data: data}
}

// ByteVocab is a byte-level BPE vocabulary without merges: the 256 bytes (spelled with GPT-2's
// byte-to-rune table) then <s> (BOS, added) and </s> (EOS) as control tokens. Every text encodes, one
// token per byte.
func ByteVocab() *tokenizer.Vocab {
	v := &tokenizer.Vocab{Model: "gpt2", Pre: "gpt-2", Merges: []string{}, BOS: 256, EOS: 257, UNK: -1, PAD: -1, EOT: -1, AddBOS: true}
	for b := range 256 {
		v.Tokens = append(v.Tokens, string(tokenizer.ByteLevelRune(byte(b))))
		v.Types = append(v.Types, tokenizer.TypeNormal)
	}
	v.Tokens = append(v.Tokens, "<s>", "</s>")
	v.Types = append(v.Types, tokenizer.TypeControl, tokenizer.TypeControl)
	return v
}

// LoadTokenizer reads the vocabulary at path with loader.OpenVocab (tokenizer.json,
// tokenizer.bin, a GGUF file, a Hugging Face directory), also accepting a bare directory of
// vocab.json + merges.txt without config.json. It returns the chat template found with it.
func LoadTokenizer(path string) (*tokenizer.Vocab, string, error) {
	vj, mt := filepath.Join(path, "vocab.json"), filepath.Join(path, "merges.txt")
	if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
		if _, err := os.Stat(vj); err == nil {
			if _, err := os.Stat(mt); err == nil {
				v, err := tokenizer.VocabFromGPT2Files(vj, mt)
				return v, "", err
			}
		}
	}
	return loader.OpenVocab(path)
}
