// This file opens an adapter of either format, checks it against its base, and makes random
// adapters (tests, benchmarks).
package lora

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// Open reads the adapter at path for base: a PEFT directory (or its adapter_config.json or
// adapter_model.safetensors), or a llama.cpp GGUF adapter file. It is checked against the base
// weights ws (Check) when ws is not nil.
func Open(path string, base *model.Config, ws map[string]*tensor.Tensor) (*Adapter, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	var a *Adapter
	switch b := filepath.Base(path); {
	case fi.IsDir():
		a, err = ReadPEFT(path, base)
	case b == ConfigFile || b == WeightsFile:
		a, err = ReadPEFT(filepath.Dir(path), base)
	default:
		a, err = ReadGGUF(path, base.Arch)
	}
	if err != nil {
		return nil, err
	}
	if ws != nil {
		if err := Check(a, path, ws); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Check verifies that every pair of a adapts a weight of the base ws of the pair's shape; the
// error names the adapter's tensor and both shapes (an adapter made for another base).
func Check(a *Adapter, path string, ws map[string]*tensor.Tensor) error {
	for _, n := range a.Names() {
		p := a.Pairs[n]
		w, ok := ws[n]
		if !ok {
			return fmt.Errorf("lora: %s: tensor %s adapts %s, which the base model does not have (an adapter for another base?)", path, p.SrcA, n)
		}
		if len(w.Shape) != 2 || w.Shape[0] != p.Out || w.Shape[1] != p.In {
			return fmt.Errorf("lora: %s: tensors %s [%d %d] and %s [%d %d] make a [%d %d] update, the base's %s is %v (an adapter for another base?)",
				path, p.SrcA, p.Rank, p.In, p.SrcB, p.Out, p.Rank, p.Out, p.In, n, w.Shape)
		}
	}
	return nil
}

// Random makes an adapter of rank r and alpha on the modules mods (PEFT names) of every layer
// of the base cfg, with A and B uniform in ±amp (B is not zero, unlike a fresh PEFT adapter, so
// the adapter changes the output).
func Random(name string, cfg *model.Config, mods []string, r int, alpha float64, amp float32, seed uint64) (*Adapter, error) {
	shapes := cfg.Shapes()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	a := &Adapter{Name: name, Pairs: map[string]*Pair{}, Config: Config{PeftType: "LORA", TaskType: "CAUSAL_LM",
		R: r, LoraAlpha: alpha, Bias: "none", BaseModel: cfg.Arch}}
	for _, m := range moduleOrder {
		if !slices.Contains(mods, m) {
			continue
		}
		a.Config.TargetModules.List = append(a.Config.TargetModules.List, m)
	}
	for _, m := range mods {
		if _, ok := Modules[m]; !ok {
			return nil, fmt.Errorf("lora: target module %q is not one of q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", m)
		}
	}
	for l := 0; l < cfg.Layers; l++ {
		for _, m := range a.Config.TargetModules.List {
			n := WeightName(l, m)
			s, ok := shapes[n]
			if !ok || len(s) != 2 {
				return nil, fmt.Errorf("lora: the base has no 2-D %s", n)
			}
			p := &Pair{Layer: l, Module: m, Rank: r, Out: s[0], In: s[1], Alpha: alpha, Scale: ScaleOf(alpha, r, false),
				SrcA: PEFTName(l, m, "A"), SrcB: PEFTName(l, m, "B")}
			p.A, p.B = make([]float32, r*p.In), make([]float32, p.Out*r)
			for i := range p.A {
				p.A[i] = amp * (2*rng.Float32() - 1)
			}
			for i := range p.B {
				p.B[i] = amp * (2*rng.Float32() - 1)
			}
			a.Pairs[n] = p
		}
	}
	return a, nil
}
