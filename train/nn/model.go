// This file implements Model: the parameters and gradients as two flat buffers with one view
// per GGUF tensor, the activation buffers for up to maxB x maxT tokens, deterministic
// initialisation and the FLOP count used for MFU.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// Param is one tensor of the model: a view into the flat weight and gradient buffers.
type Param struct {
	Name  string // GGUF name: token_embd.weight, blk.N.attn_norm.weight, ..., output.weight
	Shape []int  // row-major, as model.Config.Shapes() gives it ([out, in] for a linear layer); a tensor-parallel rank's shard shape (ShardShape)
	W, G  []float32
}

// blockParams are one transformer block's tensors (indices into Model.params).
type blockParams struct {
	attnNorm, wq, wk, wv, wo, ffnNorm, gate, up, down *Param
}

// Model is the Llama network of cfg with everything training needs. One Model serves one
// goroutine at a time; its kernels run on the pool given to New.
type Model struct {
	Cfg model.Config // the whole model's configuration

	lc                 model.Config // the shapes this rank computes with: Cfg, or TPConfig(Cfg, TP size)
	tp                 *tpState     // nil without tensor parallelism
	pool               *kernels.Pool
	maxB, maxT         int
	w, g               []float32 // all parameters, all gradients (same layout)
	params             []Param
	embd, outNorm, out *Param // out == embd when tied
	blocks             []blockParams

	cs   []float32 // RoPE table (maxT, HeadDim): cos, sin per pair
	acts acts      // activations of the last Forward
	grad grads     // scratch of Backward

	B, T       int     // shape of the last Forward
	tokens     []int32 // (maxB*maxT) copy of the last Forward's inputs
	targets    []int32
	hasTargets bool
}

// New validates cfg (llama architecture without biases or q/k norms, adjacent-pair RoPE) and
// allocates the parameters, gradients and activations for batches of up to maxB x maxT
// tokens. Parameters start at zero: call Init or copy weights into Flat. pool nil means
// kernels.Default.
func New(cfg model.Config, maxB, maxT int, pool *kernels.Pool) (*Model, error) {
	return NewTP(cfg, maxB, maxT, pool, nil)
}

// NewTP is New for one rank of the tensor-parallel group tp (nil or of size 1: no tensor
// parallelism). The rank holds its shards of the split tensors (SplitOf) and computes with
// TPConfig's shapes; Forward and Backward reduce over tp as Megatron-LM does. Every rank of the
// group must run the same Forward/Backward calls on the same tokens.
func NewTP(cfg model.Config, maxB, maxT int, pool *kernels.Pool, tp Comm) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	switch {
	case cfg.Arch != "llama" && cfg.Arch != "mistral":
		return nil, fmt.Errorf("nn: architecture %q not supported for training (llama only)", cfg.Arch)
	case cfg.QKVBias || cfg.QKNorm:
		return nil, fmt.Errorf("nn: q/k/v biases and q/k norms are not supported (llama only)")
	case cfg.RopeNeoX:
		return nil, fmt.Errorf("nn: NeoX RoPE is not supported (llama uses adjacent pairs)")
	case maxB <= 0 || maxT <= 0:
		return nil, fmt.Errorf("nn: batch %d x %d tokens: both must be positive", maxB, maxT)
	case cfg.CtxLen > 0 && maxT > cfg.CtxLen:
		return nil, fmt.Errorf("nn: sequence length %d exceeds the context length %d", maxT, cfg.CtxLen)
	}
	if pool == nil {
		pool = kernels.Default
	}
	m := &Model{Cfg: cfg, lc: cfg, pool: pool, maxB: maxB, maxT: maxT}
	if tp != nil && tp.Size() > 1 {
		lc, err := TPConfig(cfg, tp.Size())
		if err != nil {
			return nil, err
		}
		m.lc, m.tp = lc, newTPState(tp, lc.Vocab, maxB*maxT)
	}
	m.layout()
	var factors []float32
	if cfg.RopeScaling != nil {
		var err error
		if factors, err = kernels.Llama3Factors(cfg.HeadDim, cfg.RopeTheta, *cfg.RopeScaling); err != nil {
			return nil, fmt.Errorf("nn: %w", err)
		}
	}
	rope, err := kernels.NewRope(cfg.HeadDim, cfg.RopeTheta, false, factors)
	if err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	m.cs = make([]float32, maxT*cfg.HeadDim)
	for t := 0; t < maxT; t++ {
		rope.Table(m.cs[t*cfg.HeadDim:(t+1)*cfg.HeadDim], t)
	}
	m.acts.alloc(&m.lc, maxB, maxT)
	m.grad.alloc(&m.lc, maxB, maxT)
	m.tokens = make([]int32, maxB*maxT)
	m.targets = make([]int32, maxB*maxT)
	return m, nil
}

// layout lays out every parameter, in Params order, in one weight and one gradient buffer.
func (m *Model) layout() {
	c := &m.lc
	var specs []Param
	add := func(name string, shape ...int) { specs = append(specs, Param{Name: name, Shape: shape}) }
	add("token_embd.weight", c.Vocab, c.Dim)
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", c.Dim)
		add(p+"attn_q.weight", c.QDim(), c.Dim)
		add(p+"attn_k.weight", c.KVDim(), c.Dim)
		add(p+"attn_v.weight", c.KVDim(), c.Dim)
		add(p+"attn_output.weight", c.Dim, c.QDim())
		add(p+"ffn_norm.weight", c.Dim)
		add(p+"ffn_gate.weight", c.FFN, c.Dim)
		add(p+"ffn_up.weight", c.FFN, c.Dim)
		add(p+"ffn_down.weight", c.Dim, c.FFN)
	}
	add("output_norm.weight", c.Dim)
	if !c.Tied {
		add("output.weight", c.Vocab, c.Dim)
	}
	total := 0
	for _, s := range specs {
		total += numel(s.Shape)
	}
	m.w = make([]float32, total)
	m.g = make([]float32, total)
	off := 0
	for i := range specs {
		n := numel(specs[i].Shape)
		specs[i].W = m.w[off : off+n : off+n]
		specs[i].G = m.g[off : off+n : off+n]
		off += n
	}
	m.params = specs
	m.embd = &m.params[0]
	for l := 0; l < c.Layers; l++ {
		q := m.params[1+9*l:]
		m.blocks = append(m.blocks, blockParams{&q[0], &q[1], &q[2], &q[3], &q[4], &q[5], &q[6], &q[7], &q[8]})
	}
	m.outNorm = &m.params[1+9*c.Layers]
	m.out = m.embd
	if !c.Tied {
		m.out = &m.params[2+9*c.Layers]
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Init sets deterministic initial weights from seed: N(0, 0.02) for embeddings and matrices,
// with the residual-output projections (attn_output, ffn_down) scaled by 1/sqrt(2·Layers) as
// GPT-2 and llm.c do, and norm weights 1. Each tensor draws from its own PCG stream
// (seed, tensor index), so a tensor's values do not depend on the others'. A tensor-parallel
// rank draws each whole tensor and keeps its shard, so its weights are the unsplit model's.
func (m *Model) Init(seed uint64) {
	shapes := m.Cfg.Shapes()
	resid := 0.02 / math.Sqrt(2*float64(m.Cfg.Layers))
	m.pool.For(len(m.params), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			p := &m.params[i]
			if len(p.Shape) == 1 {
				for j := range p.W {
					p.W[j] = 1
				}
				continue
			}
			std := 0.02
			if isResidOut(p.Name) {
				std = resid
			}
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			full := p.W
			if m.tp != nil {
				full = make([]float32, numel(shapes[p.Name]))
			}
			for j := range full {
				full[j] = float32(r.NormFloat64() * std)
			}
			if m.tp != nil {
				Shard(p.W, full, p.Name, shapes[p.Name], m.tp.comm.Rank(), m.tp.comm.Size())
			}
		}
	})
}

func isResidOut(name string) bool {
	n := len(name)
	return (n > 19 && name[n-19:] == ".attn_output.weight") || (n > 16 && name[n-16:] == ".ffn_down.weight")
}

// Params returns every tensor in a fixed order: token_embd.weight, then for each block
// attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, then
// output_norm.weight and (untied only) output.weight. This is also their order in Flat.
func (m *Model) Params() []Param { return m.params }

// Flat returns the flat weight and gradient buffers (Params are views into them).
func (m *Model) Flat() (w, g []float32) { return m.w, m.g }

// ZeroGrad sets every gradient to zero.
func (m *Model) ZeroGrad() { clear(m.g) }

// NumParams is the number of parameters this rank holds (a tied output matrix counted once).
func (m *Model) NumParams() int64 { return int64(len(m.w)) }

// Logits returns the (B,T,Vocab) logits of the last Forward (valid until the next Forward); a
// tensor-parallel rank returns its (B,T,Vocab/TP) columns.
func (m *Model) Logits() []float32 { return m.acts.logits[:m.B*m.T*m.lc.Vocab] }

// TP returns this rank's tensor-parallel rank and group size (0, 1 without tensor parallelism).
func (m *Model) TP() (rank, size int) {
	if m.tp == nil {
		return 0, 1
	}
	return m.tp.comm.Rank(), m.tp.comm.Size()
}

// FLOPsPerToken returns the training FLOPs (forward + backward) per token at sequence length
// T, as PaLM (appendix B) counts them: model = 6·N + 12·L·H·Q·T, where N is the number of
// parameters that take part in a matmul (every linear weight of the blocks plus the output
// projection Vocab x Dim, counted once even when tied to the embedding; the embedding lookup
// and the norm weights do no matmul and are excluded), L the layers, H the query heads, Q the
// head dim. The attention term counts the full T x T score matrix, as PaLM does, although the
// causal kernels compute only half. hardware = model: nothing is recomputed. The count is the
// whole model's: a tensor-parallel rank does 1/TP of it.
func (m *Model) FLOPsPerToken(T int) (modelFLOPs, hardwareFLOPs float64) {
	c := &m.Cfg
	perBlock := c.QDim()*c.Dim + 2*c.KVDim()*c.Dim + c.Dim*c.QDim() + 3*c.FFN*c.Dim
	n := float64(c.Layers)*float64(perBlock) + float64(c.Vocab)*float64(c.Dim)
	f := 6*n + 12*float64(c.Layers)*float64(c.Heads)*float64(c.HeadDim)*float64(T)
	return f, f
}
