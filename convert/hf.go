// This file implements WriteHF: a Plan as a Hugging Face model directory — config.json,
// generation_config.json, model.safetensors (sharded above Options.ShardBytes),
// tokenizer.json and tokenizer_config.json. Names, config.json fields and tensor transforms
// come from the model's family (model.FamilyOf): for llama/mistral the q/k projection rows are
// put back from GGUF's adjacent-pair order into Hugging Face's rotate-half order (the inverse
// of model.PermuteRope), so that transformers and model.LoadHF read the same network.
package convert

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// DefaultShardBytes is the default largest safetensors shard (transformers' 5 GB).
const DefaultShardBytes = 5_000_000_000

// WriteHF writes p into the directory dir (created if needed).
func WriteHF(dir string, p *Plan, opts Options) error {
	c := p.Config
	c.HFMXFP4 = false // the experts are written as floats
	if err := c.Validate(); err != nil {
		return fmt.Errorf("convert: %s: %w", dir, err)
	}
	if _, _, err := opts.weightType(); err != nil {
		return err
	}
	fam := c.Family()
	if fam.HFModelType == "" {
		return fmt.Errorf("convert: %s: architecture %s has no Hugging Face form", dir, c.Arch)
	}
	if hasTensor(p.Tensors, model.RopeFreqsName) && c.RopeScaling == nil {
		return fmt.Errorf("convert: %s: the model's %s (Llama 3 rope scaling baked into GGUF) has no config.json equivalent; not supported", dir, model.RopeFreqsName)
	}
	var tokJSON []byte
	if p.Vocab != nil {
		var err error
		if tokJSON, err = tokenizer.MarshalHFJSON(p.Vocab); err != nil {
			return fmt.Errorf("convert: %s: %w", dir, err)
		}
	}
	inConfig := map[string]bool{} // tensors config.json holds (phi3's LongRoPE factors)
	if fam.ConfigTensors != nil {
		for _, t := range fam.ConfigTensors(&c) {
			inConfig[t.Name] = true
		}
	}
	var outs []outTensor
	dtypes := map[tensor.DType]int{}
	hfShapes := model.HFShapes(&c)
	for i := range p.Tensors {
		t := &p.Tensors[i]
		if t.Name == model.RopeFreqsName || inConfig[t.Name] {
			continue // recomputed from rope_scaling
		}
		dt, err := outType(t, &opts, true)
		if err != nil {
			return err
		}
		if len(t.Shape) >= 2 {
			dtypes[dt]++
		}
		if _, ok := fam.Names.ExpertHF(t.Name, 0); ok && len(t.Shape) == 3 {
			outs = append(outs, expertTensors(&fam.Names, t, dt)...)
			continue
		}
		if len(fam.HFInterleaved) > 0 {
			joined, skip, err := interleavedOut(fam, &c, p, t, dt, hfShapes)
			if err != nil {
				return err
			}
			if skip {
				continue
			}
			if joined != nil {
				outs = append(outs, *joined)
				continue
			}
		}
		name, ok := fam.Names.HF(t.Name)
		if !ok {
			return fmt.Errorf("convert: %s: tensor %s has no Hugging Face name", dir, t.Name)
		}
		var transform func(*tensor.Tensor) (*tensor.Tensor, error)
		if fam.ToHFTensor != nil {
			transform = fam.ToHFTensor(&c, t.Name)
		}
		shape := t.Shape
		if s, ok := hfShapes[t.Name]; ok && fam.HFShapes != nil {
			shape = s // transposed by ToHFTensor (gpt-oss's down_proj)
		}
		outs = append(outs, outTensor{Name: name, Type: dt, Shape: shape, Gen: converted(t, dt, transform)})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	shard := opts.ShardBytes
	if shard <= 0 {
		shard = DefaultShardBytes
	}
	if err := writeSafetensorsDir(dir, outs, shard); err != nil {
		return err
	}
	torch := "float32"
	best := 0
	for dt, n := range dtypes {
		if n > best {
			best, torch = n, map[tensor.DType]string{tensor.F32: "float32", tensor.F16: "float16", tensor.BF16: "bfloat16"}[dt]
		}
	}
	modelType, architecture := fam.HFForm(&c)
	hc := &hfdir.Config{
		Architectures: []string{architecture}, ModelType: modelType, HiddenSize: c.Dim,
		IntermediateSize: c.FFN, NumHiddenLayers: c.Layers, NumAttentionHeads: c.Heads,
		NumKeyValueHeads: c.KVHeads, VocabSize: c.Vocab, MaxPositionEmbeddings: c.CtxLen,
		RMSNormEps: shortFloat(c.NormEps), RopeTheta: c.RopeTheta, TieWordEmbeddings: c.Tied,
		TorchDtype: torch,
		Raw:        map[string]any{"hidden_act": "silu", "transformers_version": "4.46.0", "use_cache": true},
	}
	if c.HeadDim*c.Heads != c.Dim {
		hc.HeadDim = c.HeadDim
	}
	if fam.ToHF != nil {
		fam.ToHF(&c, hc)
	}
	if r := c.RopeScaling; r != nil {
		hc.RopeScaling = &hfdir.RopeScaling{Type: "llama3", Factor: r.Factor, LowFreqFactor: r.LowFreqFactor,
			HighFreqFactor: r.HighFreqFactor, OriginalMaxPositionEmbeddings: r.OriginalMaxPositions}
	}
	gen := &hfdir.GenerationConfig{Temperature: p.Defaults.Temperature, TopP: p.Defaults.TopP,
		TopK: p.Defaults.TopK, MinP: p.Defaults.MinP, RepetitionPenalty: p.Defaults.RepetitionPenalty,
		MaxNewTokens: p.Defaults.MaxNewTokens, Raw: map[string]any{}}
	if v := p.Vocab; v != nil {
		if v.BOS >= 0 && v.BOS < c.Vocab {
			b := v.BOS
			hc.BOSTokenID, gen.BOSTokenID = &b, &b
		}
		if v.EOS >= 0 && v.EOS < c.Vocab {
			hc.EOSTokenIDs, gen.EOSTokenIDs = []int{v.EOS}, []int{v.EOS}
		}
	}
	if err := hfdir.WriteConfig(filepath.Join(dir, hfdir.ConfigFile), hc); err != nil {
		return err
	}
	if err := hfdir.WriteGenerationConfig(filepath.Join(dir, hfdir.GenerationFile), gen); err != nil {
		return err
	}
	if p.Vocab != nil {
		if err := os.WriteFile(filepath.Join(dir, hfdir.TokenizerJSONFile), tokJSON, 0o644); err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		if err := hfdir.WriteTokenizerConfig(filepath.Join(dir, hfdir.TokenizerConfigFile), tokenizer.HFConfig(p.Vocab, p.ChatTemplate, p.Config.CtxLen)); err != nil {
			return err
		}
	}
	return nil
}

// shortFloat widens a float32 to the float64 with the shortest decimal spelling that rounds
// back to it (1e-05, not 9.999999747378752e-06).
func shortFloat(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}

// expertTensors splits the stacked expert tensor t ([experts, rows, cols], GGUF) into the
// Hugging Face matrices of its experts, each converted to dt when written. The experts are
// written one after another: t is loaded once for all of them and dropped after the last.
func expertTensors(names *model.NameMap, t *Tensor, dt tensor.DType) []outTensor {
	var cached *tensor.Tensor
	n := t.Shape[0]
	outs := make([]outTensor, 0, n)
	for e := 0; e < n; e++ {
		name, _ := names.ExpertHF(t.Name, e)
		sub := &Tensor{Name: name, Type: t.Type, Shape: t.Shape[1:], Load: func() (*tensor.Tensor, error) {
			if cached == nil {
				var err error
				if cached, err = t.Load(); err != nil {
					return nil, err
				}
			}
			s, err := cached.Slice(e)
			if e == n-1 {
				cached = nil
			}
			if err != nil {
				return nil, fmt.Errorf("convert: %w", err)
			}
			s.Name = name
			return s, nil
		}}
		outs = append(outs, outTensor{Name: name, Type: dt, Shape: sub.Shape, Gen: converted(sub, dt, nil)})
	}
	return outs
}
