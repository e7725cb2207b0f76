// This file turns a trained adapter (the trainer's A/B parameters) into a lora.Adapter, which
// package lora writes in PEFT's format or as llama.cpp's GGUF adapter, and merges it into the
// base's float weights for a merged model file.
package sft

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

// PEFTAdapter is a trained adapter as the trainer holds it.
type PEFTAdapter struct {
	Config  model.Config
	Base    string // base_model_name_or_path
	Rank    int
	Alpha   float64
	Dropout float64
	Targets []string             // GGUF block names (attn_q, ...)
	Tensors map[string][]float32 // by nn.AdapterNames: blk.N.attn_q.weight.lora_a [r, in], .lora_b [out, r]
	ShapeOf map[string][]int
}

// ToLoRA returns a as a lora.Adapter (package lora writes it in PEFT's format, with B's q/k rows
// in Hugging Face's order, or as llama.cpp's GGUF adapter, and serves it).
func ToLoRA(name string, a *PEFTAdapter) (*lora.Adapter, error) {
	var mods []string
	for hf, g := range lora.Modules {
		if slices.Contains(a.Targets, g) {
			mods = append(mods, hf)
		}
	}
	slices.Sort(mods)
	ad := lora.New(name, lora.Config{TaskType: "CAUSAL_LM", R: a.Rank, LoraAlpha: a.Alpha, LoraDropout: a.Dropout,
		TargetModules: lora.Targets{List: mods}, BaseModel: a.Base, Bias: "none", InferenceMode: true})
	for _, w := range slices.Sorted(maps.Keys(a.Tensors)) {
		base, ok := strings.CutSuffix(w, ".lora_a")
		if !ok {
			continue
		}
		layer, mod, ok := lora.ParseWeight(base)
		if !ok {
			return nil, fmt.Errorf("sft: adapter: %s is not a weight LoRA targets", base)
		}
		an, bn := nn.AdapterNames(base)
		A, B := a.Tensors[an], a.Tensors[bn]
		as, bs := a.ShapeOf[an], a.ShapeOf[bn]
		if B == nil || len(as) != 2 || len(bs) != 2 {
			return nil, fmt.Errorf("sft: adapter: %s: A or B missing", base)
		}
		if err := ad.Set(layer, mod, A, B, as[1], bs[0]); err != nil {
			return nil, fmt.Errorf("sft: adapter: %w", err)
		}
	}
	return ad, nil
}

// Merge returns base's weights with each adapted weight replaced by W + (alpha/r)·B·A
// (float64 sums), for a merged model file.
func Merge(base map[string][]float32, shapes map[string][]int, tensors map[string][]float32, rank int, scale float64) map[string][]float32 {
	out := make(map[string][]float32, len(base))
	for name, w := range base {
		an, bn := nn.AdapterNames(name)
		A, B := tensors[an], tensors[bn]
		if A == nil || B == nil {
			out[name] = w
			continue
		}
		m := slices.Clone(w)
		rows, cols := shapes[name][0], shapes[name][1]
		for o := range rows {
			for i := range cols {
				var s float64
				for k := range rank {
					s += float64(B[o*rank+k]) * float64(A[k*cols+i])
				}
				m[o*cols+i] += float32(scale * s)
			}
		}
		out[name] = m
	}
	return out
}
