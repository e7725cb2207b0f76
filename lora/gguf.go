// This file reads and writes LoRA adapters in llama.cpp's GGUF form (its --lora files, as
// convert_lora_to_gguf.py writes them): general.type = "adapter", adapter.type = "lora",
// adapter.lora.alpha (f32; the scale of a pair of rank r is alpha/r, or 1 when alpha is 0), and
// per adapted weight W the tensors W.lora_a [r, in] and W.lora_b [out, r] (row-major shapes;
// ggml's ne are reversed), with q/k rows already in the base GGUF's layout.
package lora

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/tensor"
)

// GGUF metadata keys of an adapter file.
const (
	keyArch  = "general.architecture"
	keyType  = "general.type"
	keyAType = "adapter.type"
	keyAlpha = "adapter.lora.alpha"
)

// ReadGGUF reads a llama.cpp LoRA adapter; arch, when not "", must be the file's architecture.
func ReadGGUF(path, arch string) (*Adapter, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	defer f.Close()
	return fromGGUF(f, path, arch)
}

func fromGGUF(f *gguf.File, path, arch string) (*Adapter, error) {
	if t, _ := f.String(keyType); t != "adapter" {
		return nil, fmt.Errorf("lora: %s: %s = %q, want \"adapter\"", path, keyType, t)
	}
	if t, _ := f.String(keyAType); t != "lora" {
		return nil, fmt.Errorf("lora: %s: %s = %q, want \"lora\"", path, keyAType, t)
	}
	if a, _ := f.String(keyArch); arch != "" && a != arch {
		return nil, fmt.Errorf("lora: %s: %s = %q, the base model is %q", path, keyArch, a, arch)
	}
	alpha, _ := f.Float(keyAlpha)
	ad := &Adapter{Name: strings.TrimSuffix(baseName(path), ".gguf"), Pairs: map[string]*Pair{},
		Config: Config{PeftType: "LORA", LoraAlpha: alpha, Bias: "none"}}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		w, ab := strings.CutSuffix(t.Name, ".lora_a")
		isA := ab
		if !ab {
			if w, ab = strings.CutSuffix(t.Name, ".lora_b"); !ab {
				return nil, fmt.Errorf("lora: %s: tensor %s is neither a .lora_a nor a .lora_b", path, t.Name)
			}
		}
		layer, mod, ok := ParseWeight(w)
		if !ok {
			return nil, fmt.Errorf("lora: %s: tensor %s adapts %s, which llmcloud does not adapt (only q/k/v/o and gate/up/down)", path, t.Name, w)
		}
		if len(t.Shape) != 2 {
			return nil, fmt.Errorf("lora: %s: tensor %s has shape %v, want 2-D", path, t.Name, t.Shape)
		}
		vals, err := t.Float32()
		if err != nil {
			return nil, fmt.Errorf("lora: %s: %w", path, err)
		}
		p := ad.Pairs[w]
		if p == nil {
			p = &Pair{Layer: layer, Module: mod}
			ad.Pairs[w] = p
		}
		if isA {
			p.SrcA, p.A, p.Rank, p.In = t.Name, vals, t.Shape[0], t.Shape[1]
		} else {
			p.SrcB, p.B, p.Out = t.Name, vals, t.Shape[0]
			if p.Rank != 0 && t.Shape[1] != p.Rank {
				return nil, fmt.Errorf("lora: %s: tensor %s has shape %v, its lora_a rank %d", path, t.Name, t.Shape, p.Rank)
			}
			p.Rank = t.Shape[1]
		}
	}
	if len(ad.Pairs) == 0 {
		return nil, fmt.Errorf("lora: %s: no LoRA tensors", path)
	}
	mods := map[string]bool{}
	for w, p := range ad.Pairs {
		if p.A == nil || p.B == nil {
			return nil, fmt.Errorf("lora: %s: %s has only one of .lora_a and .lora_b", path, w)
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		p.Alpha, p.Scale = alpha, float32(alpha/float64(p.Rank))
		if alpha == 0 { // llama.cpp: no alpha means scale 1
			p.Alpha, p.Scale = float64(p.Rank), 1
		}
		mods[p.Module] = true
		ad.Config.R = max(ad.Config.R, p.Rank)
	}
	if ad.Config.LoraAlpha == 0 {
		ad.Config.LoraAlpha = float64(ad.Config.R)
	}
	for _, m := range moduleOrder {
		if mods[m] {
			ad.Config.TargetModules.List = append(ad.Config.TargetModules.List, m)
		}
	}
	return ad, nil
}

// WriteGGUF writes a as a llama.cpp LoRA adapter for a base of architecture arch. llama.cpp
// keeps one alpha per file, so every pair's scale must be that alpha over its rank (always
// true without rsLoRA or alpha/rank patterns when all ranks are equal).
func WriteGGUF(path string, a *Adapter, arch string) error {
	names := a.Names()
	if len(names) == 0 {
		return fmt.Errorf("lora: %s: the adapter has no tensors", path)
	}
	first := a.Pairs[names[0]]
	alpha := float64(first.Scale) * float64(first.Rank)
	var ts []tensor.Tensor
	for _, n := range names {
		p := a.Pairs[n]
		if err := p.check(); err != nil {
			return err
		}
		if s := float32(alpha / float64(p.Rank)); math.Abs(float64(s-p.Scale)) > 1e-6*math.Abs(float64(p.Scale)) {
			return fmt.Errorf("lora: %s: %s has scale %g, but one GGUF alpha %g gives it %g (rsLoRA or per-module alpha/rank cannot be written as GGUF)", path, n, p.Scale, alpha, s)
		}
		ts = append(ts, *f32Tensor(n+".lora_a", []int{p.Rank, p.In}, p.A), *f32Tensor(n+".lora_b", []int{p.Out, p.Rank}, p.B))
	}
	kvs := []gguf.KV{
		{Key: keyArch, Value: gguf.Str(arch)},
		{Key: keyType, Value: gguf.Str("adapter")},
		{Key: "general.name", Value: gguf.Str(a.Name)},
		{Key: keyAType, Value: gguf.Str("lora")},
		{Key: keyAlpha, Value: gguf.F32(float32(alpha))},
	}
	if err := gguf.WriteFile(path, kvs, ts); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	return nil
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
