// This file implements the model's units and the options that distributed training builds on:
// the parameters grouped into units (unit 0 the token embedding, units 1..L the blocks, unit
// L+1 the final norm and the untied output matrix), caller-supplied weight and gradient
// storage per unit, the BeforeUse/GradReady hooks, the block range of a pipeline stage, and
// the layout of the held units in the flat buffers.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/model"
)

// Options change how NewWith builds a Model. The zero value is New's model: every block, all
// parameters in the flat buffers, no hooks, one activation slot.
type Options struct {
	// TP is the tensor-parallel group (tp.go); nil or of size 1 means none.
	TP Comm

	// FirstBlock and EndBlock make the model one pipeline stage holding blocks
	// [FirstBlock, EndBlock). The stage with FirstBlock 0 holds the token embedding (unit 0)
	// and takes tokens; the stage with EndBlock Layers holds the final norm and output (unit
	// L+1) and computes the loss; the others take and return activations. With tied
	// embeddings a last stage that is not also the first holds its own copy of token_embd as
	// unit 0 (used only as the output matrix): the trainer allreduces unit 0's gradient
	// between the first and last stages. EndBlock 0 means Layers (the whole model when
	// FirstBlock is 0 too).
	FirstBlock, EndBlock int

	// Slots is the number of micro-batches whose activations a stage keeps at once (forwards
	// whose backward has not run yet, 1F1B's in-flight micro-batches); 0 means 1.
	Slots int

	// Recompute is activation checkpointing per block (Chen et al. 2016, "Training Deep Nets
	// with Sublinear Memory Cost"; Megatron-LM's full recomputation): Forward keeps only each
	// block's input (the residual stream) and Backward re-runs a block's forward, its
	// tensor-parallel reductions included, just before the block's backward. Results are bit
	// for bit those without it; the cost is one more forward of the blocks (FLOPsPerToken's
	// hardware count includes it), the gain all blocks of all slots sharing one set of block
	// activations.
	Recompute bool

	// MoEAuxCoef weighs the load-balancing loss of a mixture of experts' routers (the mean
	// over the moe layers of E·Σ_e f_e·P_e, graph's moe_aux) added to the loss; 0: none.
	// AuxLoss reads the unweighted mean of the last Forward.
	MoEAuxCoef float64

	// W and G, when not nil, have one entry per unit (len Layers+2). A non-nil entry is the
	// storage of that unit's weights (gradients), exactly Units(...)[u].Size values, used in
	// place of the flat buffer; nil entries stay in the flat buffers. Entries may share
	// memory (for example every block's G one buffer): the hooks let the caller fill and drain
	// it in time.
	W, G [][]float32

	// BeforeUse, when set, is called before a unit's weights are read, in Forward with
	// backward false, in Backward with backward true (then also before the unit's gradients
	// are first written). Order, for a whole model with L blocks:
	//   Forward:  0, 1, ..., L, L+1, then 0 again when tied (the output projection reads it)
	//   Backward: L+1, 0 when tied, L, ..., 1, then 0 when untied (embedding backward reads no
	//             weights, only writes unit 0's gradient)
	// A stage calls it for the units it holds in the same order. Each unit is announced once
	// per Backward.
	BeforeUse func(unit int, backward bool)

	// GradReady, when set, is called once per Backward for every held unit as soon as that
	// unit's gradients of this Backward are final (added into G): L+1, L, ..., 1, then 0. On
	// a tied last stage that is not the first, unit 0 (the output copy) is ready right after
	// unit L+1.
	//
	// A hook whose communication fails panics with a *CommError: Forward and Backward let it
	// through (defer CatchComm to recover it), StageForward and StageBackward return it.
	GradReady func(unit int)

	// Adapter, when not nil, trains low-rank adapters on a frozen base (adapter.go): the
	// parameters are the adapters' matrices only.
	Adapter *Adapter
}

// Unit is one unit's parameters: their names and shapes (W and G nil) in layout order and
// their element count.
type Unit struct {
	Params []Param
	Size   int
}

// NumUnits is the number of units of cfg: Layers+2.
func NumUnits(cfg model.Config) int { return cfg.Layers + 2 }

// Units returns every unit (index 0..Layers+1) of the model NewWith(cfg, _, _, _, opt) builds,
// with this tensor-parallel rank's shard shapes; units that model does not hold (other
// pipeline stages' blocks) come back empty. Storage and hooks in opt do not matter. Callers
// use it to allocate W/G storage before NewWith.
func Units(cfg model.Config, opt Options) ([]Unit, error) {
	if opt.Adapter != nil {
		return adapterUnits(cfg, &opt)
	}
	lo, hi, err := opt.blockRange(cfg)
	if err != nil {
		return nil, err
	}
	lc, err := localConfig(cfg, opt.TP)
	if err != nil {
		return nil, err
	}
	c := &lc
	shapes := TrainedShapes(c) // the family's trained tensors, with this rank's shard shapes
	if shapes == nil {
		return nil, fmt.Errorf("nn: architecture %q has no registered family", c.Arch)
	}
	units := make([]Unit, c.Layers+2)
	idx := 0 // tensor index in the whole model (Init's stream)
	placed := 0
	add := func(u int, held bool, name string) {
		shape, ok := shapes[name]
		if !ok {
			return
		}
		placed++
		if held {
			units[u].Params = append(units[u].Params, Param{Name: name, Shape: append([]int(nil), shape...), index: idx})
			units[u].Size += numel(shape)
		}
		idx++
	}
	first, last := lo == 0, hi == c.Layers
	add(0, first || (last && c.Tied), "token_embd.weight")
	for l := 0; l < c.Layers; l++ {
		p, h := fmt.Sprintf("blk.%d.", l), l >= lo && l < hi
		for _, t := range llamaBlock {
			add(l+1, h, p+t)
		}
		for _, name := range blockExtras(shapes, p) {
			add(l+1, h, name)
		}
	}
	add(c.Layers+1, last, "output_norm.weight")
	add(c.Layers+1, last, "output.weight")
	if placed != len(shapes) {
		return nil, fmt.Errorf("nn: architecture %q has tensors outside the blocks that training does not place", c.Arch)
	}
	return units, nil
}

// TrainedShapes is c's tensors (model.Config.Shapes) less those c itself determines
// (model.Family.ConfigTensors: Phi-3's LongRoPE divisors), which training binds as constants
// and never updates; nil for an unregistered architecture.
func TrainedShapes(c *model.Config) map[string][]int {
	shapes := c.Shapes()
	if f := c.Family(); f != nil && f.ConfigTensors != nil {
		for _, t := range f.ConfigTensors(c) {
			delete(shapes, t.Name)
		}
	}
	return shapes
}

// llamaBlock is the order of the Llama block's tensors in a unit; a family's further block
// tensors (Qwen2's q/k/v biases, Qwen3's q/k norms) follow them in name order (blockExtras).
var llamaBlock = []string{"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
	"attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}

// blockExtras lists, sorted, the tensors of shapes with prefix p ("blk.N.") not in llamaBlock.
func blockExtras(shapes map[string][]int, p string) []string {
	var out []string
	for name := range shapes {
		if rest, ok := strings.CutPrefix(name, p); ok && !slices.Contains(llamaBlock, rest) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// blockRange is the validated [lo, hi) of opt's stage.
func (o *Options) blockRange(cfg model.Config) (lo, hi int, err error) {
	lo, hi = o.FirstBlock, o.EndBlock
	if hi == 0 {
		hi = cfg.Layers
	}
	if lo < 0 || hi > cfg.Layers || lo >= hi {
		return 0, 0, fmt.Errorf("nn: stage blocks [%d, %d) outside the model's %d blocks or empty", lo, hi, cfg.Layers)
	}
	return lo, hi, nil
}

// layout lays out the held units' parameters, in Params order, in opt's storage or the flat
// weight and gradient buffers (which hold, in unit order, the units without external storage).
func (m *Model) layout(units []Unit, opt *Options) error {
	for _, s := range [][][]float32{opt.W, opt.G} {
		if s != nil && len(s) != len(units) {
			return fmt.Errorf("nn: %d storage entries for %d units", len(s), len(units))
		}
	}
	ext := func(s [][]float32, u int) []float32 {
		if s == nil {
			return nil
		}
		return s[u]
	}
	var nw, ng int
	for u, un := range units {
		for _, s := range [][][]float32{opt.W, opt.G} {
			if b := ext(s, u); b != nil && len(b) != un.Size {
				return fmt.Errorf("nn: unit %d has %d parameters, its storage %d", u, un.Size, len(b))
			}
		}
		if ext(opt.W, u) == nil {
			nw += un.Size
		}
		if ext(opt.G, u) == nil {
			ng += un.Size
		}
	}
	m.w, m.g = make([]float32, nw), make([]float32, ng)
	m.unitW, m.unitG = make([][]float32, len(units)), make([][]float32, len(units))
	var ow, og int
	for u, un := range units {
		if un.Size == 0 { // not held: no storage, even an empty one the caller passed
			continue
		}
		if m.unitW[u] = ext(opt.W, u); m.unitW[u] == nil {
			m.unitW[u], ow = m.w[ow:ow+un.Size:ow+un.Size], ow+un.Size
		}
		if m.unitG[u] = ext(opt.G, u); m.unitG[u] == nil {
			m.unitG[u], og = m.g[og:og+un.Size:og+un.Size], og+un.Size
		}
		off := 0
		for _, p := range un.Params {
			n := numel(p.Shape)
			p.W, p.G = m.unitW[u][off:off+n:off+n], m.unitG[u][off:off+n:off+n]
			p.unit = u
			m.params = append(m.params, p)
			off += n
		}
		m.numParams += int64(un.Size)
	}
	return nil
}

// holds reports whether the model holds unit u.
func (m *Model) holds(u int) bool { return u >= 0 && u < len(m.unitW) && m.unitW[u] != nil }

// Unit returns unit u's weight and gradient storage (nil, nil when the model does not hold it).
func (m *Model) Unit(u int) (w, g []float32) {
	if !m.holds(u) {
		return nil, nil
	}
	return m.unitW[u], m.unitG[u]
}

// Stage returns the blocks [lo, hi) the model holds and whether it is the first stage (takes
// tokens) and the last (computes the loss).
func (m *Model) Stage() (lo, hi int, first, last bool) { return m.lo, m.hi, m.first, m.last }

// use and ready call the hooks.
func (m *Model) use(u int, backward bool) {
	if m.opt.BeforeUse != nil {
		m.opt.BeforeUse(u, backward)
	}
}

func (m *Model) ready(u int) {
	if m.opt.GradReady != nil {
		m.opt.GradReady(u)
	}
}

// Init sets deterministic initial weights from seed: N(0, 0.02) for embeddings and matrices,
// with the residual-output projections (attn_output, ffn_down) scaled by 1/sqrt(2·Layers) as
// GPT-2 and llm.c do, norm weights (q/k norms included) 1 and biases 0. Each tensor draws from its own PCG stream
// (seed, index of the tensor in the whole model), so a tensor's values do not depend on the
// others' nor on which stage holds it. A tensor-parallel rank draws each whole tensor and
// keeps its shard, so its weights are the unsplit model's. Units sharing storage are written
// one after another.
func (m *Model) Init(seed uint64) {
	if m.opt.Adapter != nil {
		m.initAdapter(seed)
		return
	}
	m.pool.For(len(m.params), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			initParam(&m.params[i], m.Cfg, m.opt.TP, seed)
		}
	})
}

// InitUnit writes into w (Units(cfg, opt)[unit].Size values) the weights Init(seed) gives
// that unit, for callers that keep units outside a Model (ZeRO-3 shards).
func InitUnit(cfg model.Config, opt Options, unit int, seed uint64, w []float32) error {
	units, err := Units(cfg, opt)
	if err != nil {
		return err
	}
	if unit < 0 || unit >= len(units) || len(w) != units[unit].Size {
		return fmt.Errorf("nn: InitUnit: unit %d with %d values", unit, len(w))
	}
	off := 0
	for _, p := range units[unit].Params {
		n := numel(p.Shape)
		p.W = w[off : off+n]
		initParam(&p, cfg, opt.TP, seed)
		off += n
	}
	return nil
}

// initParam draws p's whole tensor of cfg from (seed, p.index) and keeps tp's shard of it.
func initParam(p *Param, cfg model.Config, tp Comm, seed uint64) {
	if len(p.Shape) == 1 {
		v := float32(1) // norm weights
		if strings.HasSuffix(p.Name, ".bias") {
			v = 0
		}
		for j := range p.W {
			p.W[j] = v
		}
		return
	}
	std := 0.02
	if isResidOut(p.Name) {
		std = 0.02 / math.Sqrt(2*float64(cfg.Layers))
	}
	r := rand.New(rand.NewPCG(seed, uint64(p.index)))
	if tp == nil || tp.Size() == 1 {
		for j := range p.W {
			p.W[j] = float32(r.NormFloat64() * std)
		}
		return
	}
	shape := cfg.Shapes()[p.Name]
	full := make([]float32, numel(shape))
	for j := range full {
		full[j] = float32(r.NormFloat64() * std)
	}
	Shard(p.W, full, p.Name, shape, tp.Rank(), tp.Size())
}

func isResidOut(name string) bool {
	n := len(name)
	return (n > 19 && name[n-19:] == ".attn_output.weight") || (n > 16 && name[n-16:] == ".ffn_down.weight") ||
		strings.HasSuffix(name, ".ffn_down_exps.weight") || strings.HasSuffix(name, ".ffn_down_shexp.weight")
}
