// This file implements Model: the parameters and gradients as two flat buffers with one view
// per GGUF tensor, the compiled graph (graph.go) for batches of up to maxB x maxT tokens,
// deterministic initialisation and the FLOP count used for MFU.
package nn

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// Param is one tensor of the model: a view into its unit's weight and gradient storage.
type Param struct {
	Name  string // GGUF name: token_embd.weight, blk.N.attn_norm.weight, ..., output.weight
	Shape []int  // row-major, as model.Config.Shapes() gives it ([out, in] for a linear layer); a tensor-parallel rank's shard shape (ShardShape)
	W, G  []float32

	unit  int // the unit holding it
	index int // its index among the whole model's tensors (Init's stream)
}

// Model is the Llama-family network of cfg (or one pipeline stage of it) with everything training
// needs. One Model serves one goroutine at a time; its kernels run on the pool given to New.
type Model struct {
	Cfg model.Config // the whole model's configuration

	lc           model.Config // the shapes this rank computes with: Cfg, or TPConfig(Cfg, TP size)
	pool         *kernels.Pool
	opt          Options
	maxB, maxT   int
	lo, hi       int  // blocks held: [lo, hi)
	first, last  bool // holds the embedding input / the final norm, output and loss
	w, g         []float32
	unitW, unitG [][]float32 // per unit (nil: not held)
	numParams    int64
	params       []Param

	slots []slot // the micro-batches in the activation slots

	B, T     int // shape of the last Forward
	lastSlot int // its slot (-1: a Forward)

	pending bool                 // a Forward with targets awaits its Backward
	prog    *trainexec.Program   // the graph with its backward (graph.go)
	progs   []*trainexec.Program // one per activation slot (progs[0] == prog; graph_stage.go)
}

// slot is one micro-batch's shape, kept from its StageForward for its StageBackward (the
// activations are in its program, progs[slot]).
type slot struct {
	B, T    int
	pending bool // forward done, backward not yet
}

// New validates cfg (any registered family whose graph's ops have training kernels: Llama 2/3,
// Mistral, Qwen2/2.5, Qwen3) and allocates the parameters and gradients and compiles the graph for batches of up to maxB x maxT
// tokens. Parameters start at zero: call Init or copy weights into Flat. pool nil means
// kernels.Default. It is NewWith with zero Options.
func New(cfg model.Config, maxB, maxT int, pool *kernels.Pool) (*Model, error) {
	return NewWith(cfg, maxB, maxT, pool, Options{})
}

// NewTP is New for one rank of the tensor-parallel group tp (nil or of size 1: no tensor
// parallelism). The rank holds its shards of the split tensors (SplitOf) and computes with
// TPConfig's shapes; Forward and Backward reduce over tp as Megatron-LM does. Every rank of the
// group must run the same Forward/Backward calls on the same tokens. It is NewWith with
// Options{TP: tp}.
func NewTP(cfg model.Config, maxB, maxT int, pool *kernels.Pool, tp Comm) (*Model, error) {
	return NewWith(cfg, maxB, maxT, pool, Options{TP: tp})
}

// NewWith is New with options: tensor parallelism, a pipeline stage, activation slots,
// per-unit storage, hooks (see Options).
func NewWith(cfg model.Config, maxB, maxT int, pool *kernels.Pool, opt Options) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	switch {
	case maxB <= 0 || maxT <= 0:
		return nil, fmt.Errorf("nn: batch %d x %d tokens: both must be positive", maxB, maxT)
	case cfg.CtxLen > 0 && maxT > cfg.CtxLen:
		return nil, fmt.Errorf("nn: sequence length %d exceeds the context length %d", maxT, cfg.CtxLen)
	case opt.Slots < 0:
		return nil, fmt.Errorf("nn: %d activation slots", opt.Slots)
	}
	if pool == nil {
		pool = kernels.Default
	}
	units, err := Units(cfg, opt)
	if err != nil {
		return nil, err
	}
	lc, err := localConfig(cfg, opt.TP)
	if err != nil {
		return nil, err
	}
	m := &Model{Cfg: cfg, lc: lc, pool: pool, opt: opt, maxB: maxB, maxT: maxT}
	m.lo, m.hi, _ = opt.blockRange(cfg)
	m.first, m.last = m.lo == 0, m.hi == cfg.Layers
	if err := m.layout(units, &opt); err != nil {
		return nil, err
	}
	m.slots = make([]slot, max(opt.Slots, 1))
	if err := m.buildGraph(); err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	return m, nil
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Params returns every held tensor in a fixed order: token_embd.weight, then for each block
// attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down and the
// family's further block tensors in name order (Qwen2: attn_k/q/v.bias; Qwen3: attn_k_norm,
// attn_q_norm), then output_norm.weight and (untied only) output.weight. This is unit order, and the order of
// the units kept in the flat buffers.
func (m *Model) Params() []Param { return m.params }

// Flat returns the flat weight and gradient buffers. Without external storage (Options.W/G)
// they hold every held parameter in Params order; otherwise each holds, in the same order,
// only the units whose storage was not supplied (so w and g may then differ in layout).
func (m *Model) Flat() (w, g []float32) { return m.w, m.g }

// ZeroGrad sets every held gradient to zero, external storage included.
func (m *Model) ZeroGrad() {
	clear(m.g)
	for u, g := range m.unitG {
		if m.opt.G != nil && m.opt.G[u] != nil {
			clear(g)
		}
	}
}

// NumParams is the number of parameters this rank holds (a tied output matrix counted once;
// a tied last stage counts its copy of the embedding).
func (m *Model) NumParams() int64 { return m.numParams }

// Logits returns the (B,T,Vocab) logits of the last Forward (valid until the next Forward); a
// tensor-parallel rank returns its (B,T,Vocab/TP) columns; nil on a stage that is not the last.
func (m *Model) Logits() []float32 {
	if !m.last {
		return nil
	}
	return m.progs[max(m.lastSlot, 0)].Logits()[:m.B*m.T*m.lc.Vocab]
}

// TP returns this rank's tensor-parallel rank and group size (0, 1 without tensor parallelism).
func (m *Model) TP() (rank, size int) {
	if m.opt.TP == nil || m.opt.TP.Size() == 1 {
		return 0, 1
	}
	return m.opt.TP.Rank(), m.opt.TP.Size()
}

// FLOPsPerToken returns the training FLOPs (forward + backward) per token at sequence length
// T, as PaLM (appendix B) counts them: model = 6·N + 12·L·H·Q·T, where N is the number of
// parameters that take part in a matmul (every linear weight of the blocks plus the output
// projection Vocab x Dim, counted once even when tied to the embedding; the embedding lookup
// and the norm weights do no matmul and are excluded), L the layers, H the query heads, Q the
// head dim. The attention term counts the full T x T score matrix, as PaLM does, although the
// causal kernels compute only half. hardware = model without Options.Recompute; with it,
// hardware adds the blocks' forward again: 2·N_blocks + 4·L·H·Q·T (a third of their model
// count, as PaLM's HFU does). The count is the whole model's: a tensor-parallel rank does
// 1/TP of it.
func (m *Model) FLOPsPerToken(T int) (modelFLOPs, hardwareFLOPs float64) {
	c := &m.Cfg
	perBlock := c.QDim()*c.Dim + 2*c.KVDim()*c.Dim + c.Dim*c.QDim() + 3*c.FFN*c.Dim
	if c.Experts > 0 { // the router and the experts a token runs (and the shared expert)
		perBlock += c.Experts*c.Dim + 3*c.ExpertsUsed*c.ExpertWidth()*c.Dim + 3*c.SharedFFN*c.Dim - 3*c.FFN*c.Dim
	}
	blocks := float64(c.Layers) * float64(perBlock)
	attn := float64(c.Layers) * float64(c.Heads) * float64(c.HeadDim) * float64(T)
	f := 6*(blocks+float64(c.Vocab)*float64(c.Dim)) + 12*attn
	if !m.opt.Recompute {
		return f, f
	}
	return f, f + 2*blocks + 4*attn
}
