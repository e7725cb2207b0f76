// Package model implements decoder-only transformers on CPU, one registered Family per
// architecture (family.go: llama (with experts: Mixtral), mistral, qwen2, qwen2moe, qwen3, qwen3moe,
// gemma2, gemma3, phi3, deepseek2, gpt-oss today): their configuration, their weights under GGUF tensor names, loaders for GGUF,
// llama2.c and Hugging Face checkpoints, and the forward pass with a KV cache through the graph
// each family's builder writes.
//
// This file implements Config and the tensor shapes a configuration calls for.
package model

import (
	"fmt"

	"github.com/llmcloud/llmcloud/kernels"
)

// RopeScaling holds Llama 3 rope scaling parameters (see kernels.Llama3Factors).
type RopeScaling = kernels.RopeScaling

// Config describes a network's shape and numerics.
type Config struct {
	Arch        string       // the registered family's GGUF architecture: "llama", "mistral", "qwen2", "qwen3"
	Dim         int          // residual width (embedding length)
	Layers      int          // transformer blocks
	Heads       int          // query heads
	KVHeads     int          // key/value heads (GQA when < Heads, MQA when 1)
	HeadDim     int          // per-head width (often Dim/Heads; qwen3 may differ)
	FFN         int          // feed-forward hidden width
	Vocab       int          // vocabulary size
	CtxLen      int          // trained context length
	RopeTheta   float64      // RoPE frequency base
	RopeScaling *RopeScaling // Llama 3 frequency scaling, nil if none
	RopeNeoX    bool         // rotate-half RoPE (qwen2/qwen3); false = adjacent pairs
	NormEps     float32      // RMSNorm epsilon
	Tied        bool         // output projection shares token_embd.weight
	QKVBias     bool         // attn_q/k/v have biases (qwen2)
	QKNorm      bool         // per-head RMSNorm of q and k before RoPE (qwen3)
	LongRope    *LongRope    // Phi-3's LongRoPE scaling (family_phi3.go), nil if none
	Experts     int          // mixture-of-experts expert count; 0 = dense (families with Family.Experts run them)
	ExpertsUsed int          // experts used per token (top-k), 1..Experts when Experts > 0
	ExpertsNorm bool         // the chosen experts' weights renormalised to sum 1 (Mixtral; not Qwen2-MoE)
	ExpertFFN   int          // an expert's hidden width (0: FFN)
	SharedFFN   int          // the shared expert's hidden width (0: no shared expert; Qwen2-MoE)

	// Gemma 2 (family_gemma2.go): the window of the sliding-window (local) layers, the soft-caps
	// of attention scores and of the final logits (0 = none), and the attention scale's
	// 1/sqrt(AttnScalar) (query_pre_attn_scalar; 0 = HeadDim).
	SlidingWindow int
	AttnSoftcap   float64
	FinalSoftcap  float64
	AttnScalar    float64

	// Gemma 3 (family_gemma3.go): every SlidingPattern-th layer is global, the others local
	// (0 = Gemma 2's even layers local); the local layers' RoPE base (0 = RopeTheta); the
	// global layers' linear RoPE scaling factor (angles divided by it; 0 = none).
	SlidingPattern int
	RopeLocalTheta float64
	RopeLinear     float64

	// DeepSeek-V2 (family_deepseek2.go): multi-head latent attention. KVLoraRank > 0 makes the
	// attention MLA: HeadDim is a q/k head's width (qk_nope_head_dim + RopeDim), VHeadDim a v
	// head's, and the KV cache holds per token the latent (KVLoraRank) and the shared RoPE key
	// (RopeDim) only. QLoraRank > 0: q through a low-rank pair (attn_q_a, attn_q_b).
	// DenseLead leading blocks have a dense feed-forward; ExpertsScale multiplies the routed
	// experts' weights (0 = 1); ExpertsSigmoid scores the router's logits by sigmoid, not softmax.
	QLoraRank, KVLoraRank, RopeDim, VHeadDim, DenseLead int
	ExpertsScale                                        float64
	ExpertsSigmoid                                      bool
	// DeepSeek-V2/V3 (deepseek3.go): YaRN RoPE scaling (nil if none); V3's per-expert
	// selection bias (exp_probs_b.bias, added to the scores for choosing only); grouped top-k:
	// ExpertGroups groups of experts, the best ExpertGroupsUsed of them searched (0: none).
	Yarn                           *Yarn
	ExpertsBias                    bool
	ExpertGroups, ExpertGroupsUsed int

	// gpt-oss (gptoss_mxfp4.go): the Hugging Face checkpoint holds the experts as MXFP4
	// _blocks/_scales (config.json quantization_config mxfp4); read from config.json only.
	HFMXFP4 bool
}

// CacheDims are the widths of a token's rows in a layer's K and V pools: KVDim each, or for
// MLA the latent plus the RoPE key in K and nothing in V.
func (c *Config) CacheDims() (k, v int) {
	if c.KVLoraRank > 0 {
		return c.KVLoraRank + c.RopeDim, 0
	}
	return c.KVDim(), c.KVDim()
}

// KVBytesPerToken is the KV cache's bytes per token over all layers, at elem bytes a value.
func (c *Config) KVBytesPerToken(elem int) int64 {
	k, v := c.CacheDims()
	return int64(c.Layers) * int64(k+v) * int64(elem)
}

// ExpertWidth is an expert's hidden width: ExpertFFN, or FFN when that is 0.
func (c *Config) ExpertWidth() int {
	if c.ExpertFFN > 0 {
		return c.ExpertFFN
	}
	return c.FFN
}

// Limits on the sizes a configuration may give: far above any real Llama-family model, low
// enough that the shapes and buffers derived from them cannot overflow or exhaust memory
// before the file's tensors are checked against them.
const (
	MaxLayers = 4096
	MaxDim    = 1 << 17 // residual width, head dim, and heads x head dim
	MaxHeads  = 4096
	MaxFFN    = 1 << 20
	MaxVocab  = 1 << 24
)

// Validate checks the configuration for consistency.
func (c *Config) Validate() error {
	if c.Family() == nil {
		return fmt.Errorf("model: unsupported architecture %q", c.Arch)
	}
	if err := checkExperts(c.Experts, c.ExpertsUsed, "expert_count", "expert_used_count"); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if c.Experts > 0 && !c.Family().Experts {
		return fmt.Errorf("model: architecture %s has no mixture-of-experts form (expert_count = %d)", c.Arch, c.Experts)
	}
	if c.Experts == 0 && c.Family().ExpertsOnly {
		return fmt.Errorf("model: architecture %s is a mixture of experts, expert_count = 0", c.Arch)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"expert_feed_forward_length", c.ExpertFFN}, {"expert_shared_feed_forward_length", c.SharedFFN}} {
		if f.v < 0 || f.v > MaxFFN {
			return fmt.Errorf("model: config %s = %d out of range [0, %d]", f.name, f.v, MaxFFN)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Dim", c.Dim}, {"Layers", c.Layers}, {"Heads", c.Heads}, {"KVHeads", c.KVHeads},
		{"HeadDim", c.HeadDim}, {"FFN", c.FFN}, {"Vocab", c.Vocab}} {
		if f.v <= 0 {
			return fmt.Errorf("model: config %s = %d, must be positive", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name   string
		v, max int
	}{{"Dim", c.Dim, MaxDim}, {"Layers", c.Layers, MaxLayers}, {"Heads", c.Heads, MaxHeads},
		{"KVHeads", c.KVHeads, MaxHeads}, {"HeadDim", c.HeadDim, MaxDim}, {"FFN", c.FFN, MaxFFN},
		{"Vocab", c.Vocab, MaxVocab}} {
		if f.v > f.max {
			return fmt.Errorf("model: config %s = %d, above the limit %d", f.name, f.v, f.max)
		}
	}
	if err := c.checkGemma(); err != nil {
		return err
	}
	if err := c.checkDeepseek3(); err != nil {
		return err
	}
	if err := c.checkMLA(); err != nil {
		return err
	}
	if c.CtxLen < 0 {
		return fmt.Errorf("model: config CtxLen = %d, must not be negative", c.CtxLen)
	}
	if q := c.Heads * c.HeadDim; q > MaxDim {
		return fmt.Errorf("model: %d heads x head dim %d = %d, above the limit %d", c.Heads, c.HeadDim, q, MaxDim)
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("model: %d heads is not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("model: head dim %d is odd (RoPE rotates pairs)", c.HeadDim)
	}
	if !(c.RopeTheta > 0) {
		return fmt.Errorf("model: rope theta %v must be positive", c.RopeTheta)
	}
	if !(c.NormEps > 0) {
		return fmt.Errorf("model: norm eps %v must be positive", c.NormEps)
	}
	return nil
}

// QDim is Heads*HeadDim, the width of the query projection.
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is KVHeads*HeadDim, the width of the key and value projections.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// Shapes returns every tensor the configuration requires, by GGUF name, with its row-major
// shape (its family's Family.Shapes; nil for an unknown architecture). The optional
// rope_freqs.weight is not included.
func (c *Config) Shapes() map[string][]int {
	f := c.Family()
	if f == nil {
		return nil
	}
	return f.Shapes(c)
}
