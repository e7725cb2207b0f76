// This file is fine-tuning with low-rank adapters (LoRA, Hu et al. 2021): with
// Options.Adapter the model's parameters are only the adapters' A and B matrices of the target
// weights, and the base weights are constants of the graph (no gradient, no optimizer state).
// The graph is model.BuildGraph's with graph.WithLowRank's branches: y = x·Wᵀ + (alpha/r)·(x·Aᵀ)·Bᵀ.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// AdapterTargets are the block weights an adapter may target, by their GGUF block names, in
// unit order (attn_q is PEFT's q_proj, attn_output o_proj, ffn_gate gate_proj, ...).
var AdapterTargets = []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}

// Adapter is a low-rank fine-tuning of a frozen base.
type Adapter struct {
	Targets []string // a subset of AdapterTargets
	Rank    int
	Alpha   float64
	// Base holds every trained tensor of the model (TrainedShapes), F32, by GGUF name; the
	// model reads it, never writes it.
	Base map[string][]float32
	// Quant holds base matrices kept in their stored type (Q8_0, Q4_K, F16, ...: QLoRA-style,
	// the frozen base never dequantized as a whole), by GGUF name, in place of their entry in
	// Base; the training matmuls read them through the quantized kernels
	// (trainexec.Param.Q).
	Quant map[string]*tensor.Tensor
	// Dropout is the probability with which the low-rank branch's input is zeroed in
	// training (PEFT's lora_dropout; never in evaluation).
	Dropout float64
}

// Scale is alpha/rank, the factor of the low-rank product.
func (a *Adapter) Scale() float64 { return a.Alpha / float64(a.Rank) }

// AdapterNames are the names of weight's A ([rank, in]) and B ([out, rank]) matrices, as
// llama.cpp's GGUF adapters name them: blk.N.attn_q.weight.lora_a, ....lora_b.
func AdapterNames(weight string) (a, b string) { return weight + ".lora_a", weight + ".lora_b" }

// check validates a against cfg.
func (a *Adapter) check(cfg model.Config, opt *Options) error {
	if a.Rank <= 0 {
		return fmt.Errorf("nn: adapter rank %d", a.Rank)
	}
	if len(a.Targets) == 0 {
		return fmt.Errorf("nn: adapter with no target modules")
	}
	for _, t := range a.Targets {
		if !slices.Contains(AdapterTargets, t) {
			return fmt.Errorf("nn: adapter target %q (want some of %s)", t, strings.Join(AdapterTargets, ","))
		}
	}
	if cfg.Experts > 0 {
		return fmt.Errorf("nn: adapters on a mixture of experts are not supported")
	}
	if (opt.TP != nil && opt.TP.Size() > 1) || opt.FirstBlock != 0 || (opt.EndBlock != 0 && opt.EndBlock != cfg.Layers) {
		return fmt.Errorf("nn: adapters train the whole model in one process (no tensor or pipeline parallelism)")
	}
	if a.Dropout < 0 || a.Dropout >= 1 {
		return fmt.Errorf("nn: adapter dropout %g outside [0, 1)", a.Dropout)
	}
	for name, shape := range TrainedShapes(&cfg) {
		if q, ok := a.Quant[name]; ok {
			if len(shape) != 2 || !slices.Equal(q.Shape, shape) {
				return fmt.Errorf("nn: adapter base: %s is %s %v, want a matrix of shape %v", name, q.Type, q.Shape, shape)
			}
			continue
		}
		if w, ok := a.Base[name]; !ok || len(w) != numel(shape) {
			return fmt.Errorf("nn: adapter base: %s missing or not of shape %v", name, shape)
		}
	}
	return nil
}

// adapterUnits are the adapter's parameters: in unit l+1 each target's A then B, in
// AdapterTargets order.
func adapterUnits(cfg model.Config, opt *Options) ([]Unit, error) {
	a := opt.Adapter
	if err := a.check(cfg, opt); err != nil {
		return nil, err
	}
	shapes := cfg.Shapes()
	units := make([]Unit, cfg.Layers+2)
	idx := 0
	for l := 0; l < cfg.Layers; l++ {
		for _, t := range AdapterTargets {
			if !slices.Contains(a.Targets, t) {
				continue
			}
			w := fmt.Sprintf("blk.%d.%s.weight", l, t)
			s, ok := shapes[w]
			if !ok || len(s) != 2 {
				return nil, fmt.Errorf("nn: adapter target %s is not a matrix of the model", w)
			}
			an, bn := AdapterNames(w)
			for _, p := range []Param{{Name: an, Shape: []int{a.Rank, s[1]}}, {Name: bn, Shape: []int{s[0], a.Rank}}} {
				p.index = idx
				idx++
				units[l+1].Params = append(units[l+1].Params, p)
				units[l+1].Size += numel(p.Shape)
			}
		}
	}
	return units, nil
}

// initAdapter draws each A from U(-1/√in, 1/√in) (PEFT's default, Kaiming-uniform with
// a=√5) on its own PCG stream (seed, index) and sets each B to 0, so training starts at the
// base model.
func (m *Model) initAdapter(seed uint64) {
	for i := range m.params {
		p := &m.params[i]
		if strings.HasSuffix(p.Name, ".lora_b") {
			clear(p.W)
			continue
		}
		bound := 1 / math.Sqrt(float64(p.Shape[1]))
		r := rand.New(rand.NewPCG(seed, uint64(p.index)))
		for j := range p.W {
			p.W[j] = float32((2*r.Float64() - 1) * bound)
		}
	}
}

// adapterExec adds the base weights (constants) to params and the low-rank branches to opt.
func (m *Model) adapterExec(params []trainexec.Param, opt *trainexec.Options) []trainexec.Param {
	a := m.opt.Adapter
	branches := map[string]graph.LowRank{}
	for _, p := range m.params {
		if w, ok := strings.CutSuffix(p.Name, ".lora_a"); ok {
			an, bn := AdapterNames(w)
			branches[w] = graph.LowRank{A: an, B: bn, Rank: a.Rank, Scale: a.Scale(), Dropout: a.Dropout}
		}
	}
	opt.Transform = func(g *graph.Graph) (*graph.Graph, error) { return graph.WithLowRank(g, branches) }
	names := make([]string, 0, len(a.Base)+len(a.Quant))
	for name := range a.Base {
		if _, ok := a.Quant[name]; !ok {
			names = append(names, name)
		}
	}
	for name := range a.Quant {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if q, ok := a.Quant[name]; ok {
			params = append(params, trainexec.Param{Name: name, Q: q})
			continue
		}
		params = append(params, trainexec.Param{Name: name, W: a.Base[name]})
	}
	return params
}

// SetDropout turns the adapters' dropout on for the following Forward and Backward calls,
// with the masks of (seed, key) (the trainer's key: its step and micro-batch), or off
// (evaluation, the default). A model without adapter dropout ignores it.
func (m *Model) SetDropout(on bool, seed, key uint64) {
	for _, p := range m.progs {
		p.SetDropout(on, seed, key)
	}
}

// Adapted reports whether the model trains an adapter (its Params are A and B matrices).
func (m *Model) Adapted() bool { return m.opt.Adapter != nil }
