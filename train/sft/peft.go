// This file writes a trained adapter as PEFT saves one (adapter_config.json and
// adapter_model.safetensors, F32, PEFT's tensor names), a small writer of its own until the
// adapter format package takes over.
package sft

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
)

// PEFTModules maps PEFT's (Hugging Face's) module names to the GGUF block weights (nn.AdapterTargets).
var PEFTModules = map[string]string{"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
	"gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}

// PEFTAdapter is what WritePEFT writes.
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

// WritePEFT writes a into dir: lora_A.weight [r, in] and lora_B.weight [out, r] of each
// target under base_model.model.<Hugging Face module name>, with B's rows put in Hugging Face's
// order where the family reorders them (Llama's q/k projections: rotate-half).
func WritePEFT(dir string, a *PEFTAdapter) error {
	fam := a.Config.Family()
	if fam == nil {
		return fmt.Errorf("sft: adapter: architecture %q has no family", a.Config.Arch)
	}
	type entry struct {
		name  string
		shape []int
		data  []float32
	}
	var ents []entry
	for w := range a.Tensors {
		base, ok := strings.CutSuffix(w, ".lora_a")
		if !ok {
			continue
		}
		hf, ok := fam.Names.HF(base)
		if !ok {
			return fmt.Errorf("sft: adapter: %s has no Hugging Face name", base)
		}
		mod := "base_model.model." + strings.TrimSuffix(hf, ".weight")
		an, bn := nn.AdapterNames(base)
		A, B := a.Tensors[an], a.Tensors[bn]
		as, bs := a.ShapeOf[an], a.ShapeOf[bn]
		if B == nil || len(as) != 2 || len(bs) != 2 {
			return fmt.Errorf("sft: adapter: %s: A or B missing", base)
		}
		if fam.ToHFTensor != nil {
			if f := fam.ToHFTensor(&a.Config, base); f != nil {
				t := &tensor.Tensor{Name: base, Type: tensor.F32, Shape: slices.Clone(bs), Data: f32Bytes(B)}
				t, err := f(t)
				if err != nil {
					return fmt.Errorf("sft: adapter: %s: %w", bn, err)
				}
				B = bytesF32(t.Data)
			}
		}
		ents = append(ents, entry{mod + ".lora_A.weight", as, A}, entry{mod + ".lora_B.weight", bs, B})
	}
	slices.SortFunc(ents, func(x, y entry) int { return strings.Compare(x.name, y.name) })
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, e := range ents {
		header[e.name] = map[string]any{"dtype": "F32", "shape": e.shape, "data_offsets": []int{off, off + 4*len(e.data)}}
		off += 4 * len(e.data)
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sft: adapter: %w", err)
	}
	err = atomicfile.Write(filepath.Join(dir, "adapter_model.safetensors"), func(w io.Writer) error {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(hb)))
		if _, err := w.Write(n[:]); err != nil {
			return err
		}
		if _, err := w.Write(hb); err != nil {
			return err
		}
		for _, e := range ents {
			if _, err := w.Write(f32Bytes(e.data)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sft: adapter: %w", err)
	}
	var mods []string
	for hf, g := range PEFTModules {
		if slices.Contains(a.Targets, g) {
			mods = append(mods, hf)
		}
	}
	slices.Sort(mods)
	cfg := map[string]any{"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": a.Base,
		"r": a.Rank, "lora_alpha": a.Alpha, "lora_dropout": a.Dropout, "target_modules": mods, "bias": "none",
		"fan_in_fan_out": false, "inference_mode": true, "init_lora_weights": true, "modules_to_save": nil,
		"use_rslora": false, "use_dora": false, "layers_to_transform": nil, "rank_pattern": map[string]any{},
		"alpha_pattern": map[string]any{}, "revision": nil}
	cb, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, "adapter_config.json"), func(w io.Writer) error {
		_, err := w.Write(append(cb, '\n'))
		return err
	})
}

func f32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	x := make([]float32, len(b)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
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
