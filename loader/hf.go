// This file opens Hugging Face model directories: config.json, the tokenizer (tokenizer.json,
// or vocab.json + merges.txt), the chat template (tokenizer_config.json or
// chat_template.jinja), the sampling defaults (generation_config.json) and the safetensors
// weights through model.LoadHF. Before the weights are loaded, every tensor is checked
// against config.json so that a bad checkpoint is reported with the file and tensor at fault.
package loader

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/format/hfquant"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/tokenizer"
)

func openHF(path string, opts Options) (*Bundle, error) {
	d, err := hfdir.Load(path)
	if err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(path, hfdir.ConfigFile)
	cfg, err := model.ConfigFromHF(d.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfgFile, err)
	}
	var tok *tokenizer.Tokenizer
	var tmpl string
	if opts.Tokenizer == "" { // otherwise Open applies the override
		v, t, err := tokenizer.OpenVocab(path)
		if err != nil {
			return nil, err
		}
		if tok, err = tokenizer.New(v); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		tmpl = t
	} else if d.TokenizerConfig != nil {
		tmpl = d.TokenizerConfig.ChatTemplate
	}
	if err := checkHFTensors(path, cfgFile, cfg); err != nil {
		return nil, err
	}
	m, err := model.LoadHF(path)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Path: path, Format: HF, Model: m, Tok: tok, ChatTemplate: tmpl, closers: []func() error{m.Close}}
	b.Name = filepath.Base(filepath.Clean(path))
	if g := d.Generation; g != nil {
		b.Defaults = Defaults{Temperature: g.Temperature, TopP: g.TopP, MinP: g.MinP,
			RepetitionPenalty: g.RepetitionPenalty, TopK: g.TopK, MaxNewTokens: g.MaxNewTokens}
	}
	return b, nil
}

// checkHFTensors compares every safetensors tensor of dir with the shapes cfg calls for and
// reports the first problem with the file and tensor it concerns.
func checkHFTensors(dir, cfgFile string, cfg model.Config) error {
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return err
	}
	defer set.Close()
	want := model.HFShapes(&cfg)
	seen := map[string]bool{}
	seenExpert := map[string]int{} // experts' tensors of each stacked GGUF tensor
	quant, qnote, err := quantizedLinears(cfgFile, set)
	if err != nil {
		return err
	}
	for _, f := range set.Files {
		for i := range f.Tensors {
			t := &f.Tensors[i]
			note := ""
			if lt, ok := quant[t.Name]; ok { // AWQ/GPTQ part: checked as the weight it packs
				if lt == nil {
					continue
				}
				t, note = lt, qnote[lt.Name]
			}
			if g, e, ok := model.HFExpertName(&cfg, t.Name); ok {
				shape, ok := want[g]
				switch {
				case !ok:
					return fmt.Errorf("%s: tensor %s is an expert's, but %s gives no experts (num_local_experts)", f.Path, t.Name, cfgFile)
				case e >= shape[0]:
					return fmt.Errorf("%s: tensor %s is expert %d, but %s gives num_local_experts = %d", f.Path, t.Name, e, cfgFile, shape[0])
				case !slices.Equal(t.Shape, shape[1:]):
					return fmt.Errorf("%s: tensor %s has shape %v but %s implies %v (a tensor shape that disagrees with config.json)%s",
						f.Path, t.Name, t.Shape, cfgFile, shape[1:], model.ExpertNote(&cfg, g))
				case t.Type != tensor.F32 && t.Type != tensor.F16 && t.Type != tensor.BF16:
					return fmt.Errorf("%s: tensor %s has dtype %s; weights must be F32, F16 or BF16", f.Path, t.Name, t.Type)
				}
				seenExpert[g]++
				if seenExpert[g] == shape[0] {
					seen[g] = true
				}
				continue
			}
			g, err := model.HFName(&cfg, t.Name)
			if err != nil {
				return fmt.Errorf("%s: tensor %s has no place in a %s model", f.Path, t.Name, cfg.Arch)
			}
			if g == "" || (g == "output.weight" && cfg.Tied) {
				continue
			}
			shape, ok := want[g]
			if !ok {
				return fmt.Errorf("%s: tensor %s is not expected by %s (model_type %s, tie_word_embeddings=%v)%s",
					f.Path, t.Name, cfgFile, cfg.Arch, cfg.Tied, model.ExpertNote(&cfg, g))
			}
			if !slices.Equal(t.Shape, shape) {
				return fmt.Errorf("%s: tensor %s%s has shape %v but %s implies %v (a tensor shape that disagrees with config.json)%s",
					f.Path, t.Name, note, t.Shape, cfgFile, shape, model.ExpertNote(&cfg, g))
			}
			packed := t.Type == tensor.U8 && (strings.HasSuffix(g, ".blocks") || strings.HasSuffix(g, ".scales")) // MXFP4 parts (gpt-oss)
			if t.Type != tensor.F32 && t.Type != tensor.F16 && t.Type != tensor.BF16 && !packed {
				return fmt.Errorf("%s: tensor %s has dtype %s; weights must be F32, F16 or BF16", f.Path, t.Name, t.Type)
			}
			seen[g] = true
		}
	}
	if f := cfg.Family(); f != nil && f.ConfigTensors != nil {
		for _, t := range f.ConfigTensors(&cfg) {
			seen[t.Name] = true // held by config.json (phi3's LongRoPE factors)
		}
	}
	var missing []string
	for g := range want {
		if !seen[g] && !(g == "output.weight") {
			missing = append(missing, g)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%s: the safetensors files lack %d tensors that %s calls for, first %s (GGUF name)%s",
			dir, len(missing), cfgFile, missing[0], model.ExpertNote(&cfg, missing[0]))
	}
	return nil
}

// quantizedLinears maps the tensors of an AWQ/GPTQ checkpoint's quantized linears: each
// .qweight to the F16 weight [out, in] it packs (after checking its parts against
// quantization_config and each other), the other parts to nil. Other checkpoints: nil.
func quantizedLinears(cfgFile string, set *safetensors.Set) (map[string]*tensor.Tensor, map[string]string, error) {
	raw, err := hfdir.ReadConfig(cfgFile)
	if err != nil {
		return nil, nil, err
	}
	qc, ok, err := hfquant.ForDir(filepath.Dir(cfgFile), raw.Raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cfgFile, err)
	}
	if !ok {
		return nil, nil, nil
	}
	parts, err := hfquant.Collect(qc, set.Tensors)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Dir(cfgFile), err)
	}
	m, notes := map[string]*tensor.Tensor{}, map[string]string{}
	for _, p := range parts {
		out, in, err := hfquant.Shape(qc, p)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w (%s)", filepath.Dir(cfgFile), err, cfgFile)
		}
		notes[p.Prefix+".weight"] = fmt.Sprintf(" (unpacked from %s %v with quantization_config.bits = %d, group_size = %d)", p.QWeight.Name, p.QWeight.Shape, qc.Bits, qc.GroupSize)
		for _, t := range []*tensor.Tensor{p.QZeros, p.Scales, p.GIdx} {
			if t != nil {
				m[t.Name] = nil
			}
		}
		m[p.QWeight.Name] = &tensor.Tensor{Name: p.Prefix + ".weight", Type: tensor.F16, Shape: []int{out, in}}
	}
	return m, notes, nil
}
