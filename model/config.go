// Package model implements decoder-only transformers on CPU, one registered Family per
// architecture (family.go: llama, mistral, qwen2, qwen3 today): their configuration, their
// weights under GGUF tensor names, loaders for GGUF, llama2.c and Hugging Face checkpoints,
// and the forward pass with a KV cache through the graph each family's builder writes.
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
	Window      int          // sliding-window attention span in positions, the row's own included (phi3); 0 = none
	Experts     int          // mixture-of-experts expert count; 0 = dense (the only kind run yet)
	ExpertsUsed int          // experts used per token
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
	if c.Window < 0 {
		return fmt.Errorf("model: config Window = %d, must not be negative", c.Window)
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
