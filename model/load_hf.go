// This file implements LoadHF: a Hugging Face model directory (config.json + safetensors)
// mapped onto GGUF tensor names by its family's NameMap, each tensor transformed as the
// family says (Family.FromHFTensor). For llama/mistral the q_proj and k_proj rows are
// permuted as llama.cpp's HF-to-GGUF converter does, turning HF's rotate-half RoPE layout
// into the adjacent-pair ("normal") layout, so the result equals the GGUF converted from the
// same checkpoint. Qwen2/Qwen3 keep HF's layout and run in NeoX (rotate-half) mode.
package model

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/format/hfquant"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/tensor"
)

// ConfigFromHF maps config.json onto a Config: the fields every family shares (hidden_size,
// num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
// intermediate_size, vocab_size, max_position_embeddings, rope_theta, rms_norm_eps,
// tie_word_embeddings, rope_scaling), then the family of model_type's Fix and FromHF.
func ConfigFromHF(c *hfdir.Config) (Config, error) {
	cfg := Config{
		Dim: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads,
		KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDimension(), FFN: c.IntermediateSize,
		Vocab: c.VocabSize, CtxLen: c.MaxPositionEmbeddings, RopeTheta: c.RopeTheta,
		NormEps: float32(c.RMSNormEps), Tied: c.TieWordEmbeddings,
	}
	// Before model_type: absurd expert counts are refused as such.
	var err error
	if cfg.Experts, cfg.ExpertsUsed, err = hfExperts(c.Raw); err != nil {
		return cfg, err
	}
	fam := FamilyOfHF(c.ModelType)
	if fam == nil && cfg.Experts > 0 {
		return cfg, fmt.Errorf("model_type %q is not supported (a mixture of %d experts)", c.ModelType, cfg.Experts)
	}
	if fam == nil {
		return cfg, fmt.Errorf("model_type %q is not supported", c.ModelType)
	}
	cfg.Arch = fam.Arch
	if fam.Fix != nil {
		fam.Fix(&cfg)
	}
	if fam.FromHF != nil {
		if err := fam.FromHF(c, &cfg); err != nil {
			return cfg, err
		}
	}
	if rs := c.RopeScaling; rs != nil && rs.Type != "default" && cfg.LongRope == nil && cfg.RopeLinear == 0 && cfg.Yarn == nil { // LongRoPE, linear (gemma3), YaRN (deepseek2): read by the family
		if rs.Type != "llama3" {
			return cfg, fmt.Errorf("rope_scaling type %q is not supported", rs.Type)
		}
		cfg.RopeScaling = &RopeScaling{Factor: rs.Factor, LowFreqFactor: rs.LowFreqFactor,
			HighFreqFactor: rs.HighFreqFactor, OriginalMaxPositions: rs.OriginalMaxPositionEmbeddings}
	}
	return cfg, cfg.Validate()
}

// LoadHF opens the model directory dir; Close the model to release the safetensors files.
func LoadHF(dir string) (*Model, error) {
	d, err := hfdir.Load(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := ConfigFromHF(d.Config)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", dir, err)
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	ts := set.Tensors
	closer := set.Close
	if qc, ok, err := hfquant.ForDir(dir, d.Config.Raw); err != nil {
		set.Close()
		return nil, fmt.Errorf("model: %s: %w", dir, err)
	} else if ok { // AWQ / GPTQ: each linear's packed tensors become one weight
		shapes := HFShapes(&cfg)
		want := func(name string) ([]int, bool) {
			g, err := HFName(&cfg, name)
			if err != nil {
				return nil, false
			}
			s, ok := shapes[g]
			return s, ok
		}
		var release func() error
		if ts, release, err = hfquant.Repack(qc, ts, want); err != nil {
			set.Close()
			return nil, fmt.Errorf("model: %s: %w", dir, err)
		}
		closeSet := set.Close
		closer = func() error { return errors.Join(closeSet(), release()) }
	}
	m, err := fromHFTensors(cfg, ts)
	if err != nil {
		closer()
		return nil, fmt.Errorf("model: %s: %w", dir, err)
	}
	m.closer = closer
	return m, nil
}

// HFName returns the GGUF name for an HF tensor name of a cfg.Arch checkpoint (its family's
// NameMap), or "" for tensors llmcloud does not use (rotary_emb.inv_freq buffers).
func HFName(cfg *Config, name string) (string, error) {
	f := cfg.Family()
	if f == nil {
		return "", fmt.Errorf("model: unsupported architecture %q", cfg.Arch)
	}
	return f.Names.GGUF(name)
}

// HFExpertName returns the GGUF name of the stacked tensor the HF tensor name of a cfg.Arch
// checkpoint is one expert of, and the expert's number; ok is false for other tensors.
func HFExpertName(cfg *Config, name string) (gguf string, expert int, ok bool) {
	f := cfg.Family()
	if f == nil {
		return "", 0, false
	}
	return f.Names.Expert(name)
}

// fromHFTensors renames HF tensors (and transforms them as the family says: for
// llama/mistral, permutes q/k) and builds the model.
func fromHFTensors(cfg Config, hf map[string]*tensor.Tensor) (*Model, error) {
	fam := cfg.Family()
	if fam == nil {
		return nil, fmt.Errorf("model: unsupported architecture %q", cfg.Arch)
	}
	ws := make(map[string]*tensor.Tensor, len(hf))
	experts := map[string]map[int]*tensor.Tensor{} // stacked GGUF name -> expert -> HF tensor
	for name, t := range hf {
		if g, e, ok := fam.Names.Expert(name); ok {
			if experts[g] == nil {
				experts[g] = map[int]*tensor.Tensor{}
			}
			experts[g][e] = t
			continue
		}
		g, err := fam.Names.GGUF(name)
		if err != nil {
			return nil, err
		}
		if g == "" || (g == "output.weight" && cfg.Tied) {
			continue
		}
		ws[g] = t
	}
	for g, es := range experts {
		t, err := stackExperts(g, es, cfg.Experts)
		if err != nil {
			return nil, err
		}
		ws[g] = t
	}
	if _, ok := ws["output.weight"]; !ok {
		cfg.Tied = true
	}
	if fam.ConfigTensors != nil {
		for _, t := range fam.ConfigTensors(&cfg) {
			if _, ok := ws[t.Name]; !ok {
				ws[t.Name] = t
			}
		}
	}
	if fam.HFMerge != nil {
		if err := fam.HFMerge(&cfg, ws); err != nil {
			return nil, err
		}
	}
	if fam.FromHFTensor != nil {
		names := make([]string, 0, len(ws))
		for name := range ws {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if tf := fam.FromHFTensor(&cfg, name); tf != nil {
				pt, err := tf(ws[name])
				if err != nil {
					return nil, err
				}
				ws[name] = pt
			}
		}
	}
	if err := splitInterleaved(fam, ws); err != nil {
		return nil, err
	}
	return New(cfg, ws)
}

// splitInterleaved replaces each tensor of ws that holds a pair of the family's
// HFInterleaved by the pair.
func splitInterleaved(fam *Family, ws map[string]*tensor.Tensor) error {
	if len(fam.HFInterleaved) == 0 {
		return nil
	}
	for name, t := range ws {
		var l int
		var suffix string
		if n, _ := fmt.Sscanf(name, "blk.%d.%s", &l, &suffix); n != 2 {
			continue
		}
		pair, ok := fam.HFInterleaved[suffix]
		if !ok {
			continue
		}
		p := fmt.Sprintf("blk.%d.", l)
		a, b, err := SplitInterleaved(t, p+pair[0], p+pair[1])
		if err != nil {
			return err
		}
		delete(ws, name)
		ws[a.Name], ws[b.Name] = a, b
	}
	return nil
}

// HFShapes returns the shapes of cfg's tensors as a Hugging Face checkpoint holds them, by
// the NameMap's GGUF-side names (Family.HFShapes, else Shapes).
func HFShapes(cfg *Config) map[string][]int {
	if f := cfg.Family(); f != nil && f.HFShapes != nil {
		return f.HFShapes(cfg)
	}
	return cfg.Shapes()
}

// PermuteRope reorders the rows of a q/k projection (weight [heads*headDim, in] or bias
// [heads*headDim]) from HF's rotate-half layout to the adjacent-pair layout: within each
// head, new row 2i+s is old row s*headDim/2+i (s = 0, 1). This is llama.cpp's converter
// permutation; whole rows move, so any dtype works. The result owns new memory.
func PermuteRope(t *tensor.Tensor, heads int) (*tensor.Tensor, error) {
	return permuteRope(t, heads, false)
}

// UnpermuteRope is the inverse of PermuteRope (adjacent-pair rows back to HF's rotate-half
// order), used when writing Hugging Face checkpoints.
func UnpermuteRope(t *tensor.Tensor, heads int) (*tensor.Tensor, error) {
	return permuteRope(t, heads, true)
}

func permuteRope(t *tensor.Tensor, heads int, inverse bool) (*tensor.Tensor, error) {
	if len(t.Shape) == 0 || heads <= 0 || t.Shape[0]%(2*heads) != 0 {
		return nil, fmt.Errorf("%s: shape %v cannot be split into %d heads of even size", t.Name, t.Shape, heads)
	}
	if err := t.Check(); err != nil {
		return nil, err
	}
	rows := t.Shape[0]
	rb := len(t.Data) / rows
	hd := rows / heads
	out := &tensor.Tensor{Name: t.Name, Type: t.Type, Shape: append([]int(nil), t.Shape...), Data: make([]byte, len(t.Data))}
	var order []int // zero-corrected (HF AWQ/GPTQ) weights: the corrections' rows move too
	if t.Zero != nil {
		order = make([]int, rows)
		// Their Data was made at load (hfquant.Repack, huge pages): permuted in place.
		src := slices.Clone(t.Data)
		out.Data, t = t.Data, &tensor.Tensor{Name: t.Name, Type: t.Type, Shape: t.Shape, Data: src, Zero: t.Zero}
	}
	for h := 0; h < heads; h++ {
		for i := 0; i < hd/2; i++ {
			for s := 0; s < 2; s++ {
				pair, half := h*hd+2*i+s, h*hd+s*hd/2+i // adjacent-pair row, rotate-half row
				dst, src := pair, half
				if inverse {
					dst, src = half, pair
				}
				copy(out.Data[dst*rb:(dst+1)*rb], t.Data[src*rb:(src+1)*rb])
				if order != nil {
					order[dst] = src
				}
			}
		}
	}
	if order != nil {
		out.Zero = t.Zero.PermuteRows(t.Cols(), order)
	}
	return out, nil
}

// stackExperts makes the GGUF tensor name [experts, rows, cols] from the HF matrices of its
// experts 0..count-1 (all of one dtype and shape), copying their data.
func stackExperts(name string, es map[int]*tensor.Tensor, count int) (*tensor.Tensor, error) {
	if len(es) != count || es[0] == nil {
		return nil, fmt.Errorf("%s: %d experts' tensors, expert_count = %d", name, len(es), count)
	}
	first := es[0]
	out := &tensor.Tensor{Name: name, Type: first.Type, Shape: append([]int{count}, first.Shape...)}
	for e := 0; e < count; e++ {
		t := es[e]
		switch {
		case t == nil:
			return nil, fmt.Errorf("%s: expert %d's tensor missing (expert_count = %d)", name, e, count)
		case t.Type != first.Type || len(t.Shape) != 2 || !slices.Equal(t.Shape, first.Shape):
			return nil, fmt.Errorf("%s: expert %d is %s%v, expert 0 %s%v", name, e, t.Type, t.Shape, first.Type, first.Shape)
		}
		if err := t.Check(); err != nil {
			return nil, err
		}
		if out.Data == nil {
			out.Data = make([]byte, 0, count*len(t.Data))
		}
		out.Data = append(out.Data, t.Data...)
	}
	return out, nil
}
