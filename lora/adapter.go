// Package lora holds low-rank adapters (LoRA) of a base model: the in-memory adapter, its two
// file formats (PEFT's adapter_config.json + adapter_model.safetensors, llama.cpp's GGUF
// adapters), merging into the base weights, and the run-time application of many adapters to
// one batch (segmented by sequence, apply.go).
//
// An adapter changes a linear layer y = x·Wᵀ (W [out, in]) into y = x·Wᵀ + scale·(x·Aᵀ)·Bᵀ with
// A [r, in] and B [out, r]; scale is alpha/r, or alpha/√r for rank-stabilized LoRA (PEFT's
// use_rslora). Adapters are held in llmcloud's own weight layout: for a llama/mistral base
// (adjacent-pair RoPE) the rows of B for q_proj and k_proj are permuted as the base's q/k rows
// are (model.PermuteRope), so a PEFT adapter is permuted on read and back on write; llama.cpp's
// GGUF adapters are already in that layout.
package lora

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Modules maps PEFT's target module names (the last component of a Llama-family linear
// layer's name) to the GGUF name of the weight they adapt, without the "blk.N." prefix.
var Modules = map[string]string{
	"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
	"gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down",
}

// moduleOrder is the order modules are listed and written in.
var moduleOrder = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// peftPath is the HF module path (under model.layers.N.) of each PEFT module name.
var peftPath = map[string]string{
	"q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj", "v_proj": "self_attn.v_proj",
	"o_proj": "self_attn.o_proj", "gate_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj", "down_proj": "mlp.down_proj",
}

// Pair is the low-rank update of one weight: A [Rank, In] and B [Out, Rank], row-major f32.
type Pair struct {
	Layer  int
	Module string // PEFT name: q_proj ...
	Rank   int
	In     int
	Out    int
	A, B   []float32
	Alpha  float64 // this module's lora_alpha (PEFT alpha_pattern may differ per module)
	Scale  float32 // alpha/Rank, or alpha/√Rank with use_rslora
	// SrcA and SrcB are the tensor names the pair was read from (for error messages).
	SrcA, SrcB string

	bT []float32 // Bᵀ [Rank, Out] for the run-time kernel (prepare)
}

// Weight is the GGUF name of the base weight p adapts, e.g. blk.3.attn_q.weight.
func (p *Pair) Weight() string { return WeightName(p.Layer, p.Module) }

// WeightName is the GGUF name of layer's weight of PEFT module mod.
func WeightName(layer int, mod string) string {
	return "blk." + strconv.Itoa(layer) + "." + Modules[mod] + ".weight"
}

// Adapter is one LoRA adapter: its configuration and a Pair per adapted weight, keyed by the
// base weight's GGUF name.
type Adapter struct {
	Name   string
	Config Config
	Pairs  map[string]*Pair
}

// Rank is the largest rank of the adapter's pairs.
func (a *Adapter) Rank() int {
	r := 0
	for _, p := range a.Pairs {
		r = max(r, p.Rank)
	}
	return r
}

// Names returns the adapted weights' names, sorted by layer then module order.
func (a *Adapter) Names() []string {
	ps := make([]*Pair, 0, len(a.Pairs))
	for _, p := range a.Pairs {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Layer != ps[j].Layer {
			return ps[i].Layer < ps[j].Layer
		}
		return modIndex(ps[i].Module) < modIndex(ps[j].Module)
	})
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Weight()
	}
	return out
}

func modIndex(m string) int {
	for i, x := range moduleOrder {
		if x == m {
			return i
		}
	}
	return len(moduleOrder)
}

// ScaleOf is PEFT's scaling of a module of rank r and alpha: alpha/r, or alpha/√r (rsLoRA).
func ScaleOf(alpha float64, r int, rslora bool) float32 {
	if rslora {
		return float32(alpha / math.Sqrt(float64(r)))
	}
	return float32(alpha / float64(r))
}

// ParseWeight splits a GGUF weight name blk.N.<gguf module>.weight into its layer and PEFT
// module name; ok is false for a weight no adapter targets.
func ParseWeight(name string) (layer int, mod string, ok bool) {
	rest, found := strings.CutPrefix(name, "blk.")
	if !found {
		return 0, "", false
	}
	ls, rest, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	l, err := strconv.Atoi(ls)
	if err != nil || l < 0 {
		return 0, "", false
	}
	g, found := strings.CutSuffix(rest, ".weight")
	if !found {
		return 0, "", false
	}
	for m, gg := range Modules {
		if gg == g {
			return l, m, true
		}
	}
	return 0, "", false
}

// check validates the pair's sizes.
func (p *Pair) check() error {
	switch {
	case p.Rank <= 0 || p.In <= 0 || p.Out <= 0:
		return fmt.Errorf("lora: %s: rank %d, in %d, out %d", p.Weight(), p.Rank, p.In, p.Out)
	case len(p.A) != p.Rank*p.In:
		return fmt.Errorf("lora: %s: A has %d values, want [%d %d]", p.SrcA, len(p.A), p.Rank, p.In)
	case len(p.B) != p.Out*p.Rank:
		return fmt.Errorf("lora: %s: B has %d values, want [%d %d]", p.SrcB, len(p.B), p.Out, p.Rank)
	}
	return nil
}

// New returns an empty adapter of configuration c (training fills it with Set, then writes it
// with WritePEFT or WriteGGUF).
func New(name string, c Config) *Adapter {
	if c.PeftType == "" {
		c.PeftType = "LORA"
	}
	return &Adapter{Name: name, Config: c, Pairs: map[string]*Pair{}}
}

// Set stores the pair of layer's module mod (a PEFT name): A [r, in] and B [out, r] row-major
// in llmcloud's layout (q/k rows as the base model holds them), r = len(A)/in; its alpha and
// scale come from the adapter's config (rank_pattern, alpha_pattern, use_rslora).
func (a *Adapter) Set(layer int, mod string, A, B []float32, in, out int) error {
	if _, ok := Modules[mod]; !ok {
		return fmt.Errorf("lora: module %q is not one of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", mod)
	}
	if in <= 0 || out <= 0 || len(A)%in != 0 {
		return fmt.Errorf("lora: layer %d %s: A has %d values, not a multiple of in = %d", layer, mod, len(A), in)
	}
	r := len(A) / in
	_, alpha := a.Config.moduleParams(modulePath(layer, mod))
	p := &Pair{Layer: layer, Module: mod, Rank: r, In: in, Out: out, A: A, B: B, Alpha: alpha,
		Scale: ScaleOf(alpha, r, a.Config.UseRSLoRA), SrcA: PEFTName(layer, mod, "A"), SrcB: PEFTName(layer, mod, "B")}
	if err := p.check(); err != nil {
		return err
	}
	a.Pairs[p.Weight()] = p
	return nil
}
