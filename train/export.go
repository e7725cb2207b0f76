// This file implements export: the trained weights (from a live Trainer or a checkpoint) as a
// convert.Plan, with the vocabulary of the data's tokenizer.json, written as GGUF or
// a Hugging Face directory so that loader, `llmcloud serve` and
// `llmcloud generate` open the result.
package train

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
)

// ExportName is general.name of exported models unless overridden.
const ExportName = "llmcloud-trained"

// Plan describes weights (F32, by GGUF name, every trained tensor of mc; the tensors mc itself
// determines, Phi-3's LongRoPE divisors, are added) with the vocabulary of the
// tokenizer.json at tokenizerPath ("" = no vocabulary).
func Plan(mc model.Config, weights map[string][]float32, tokenizerPath string) (*convert.Plan, error) {
	p := &convert.Plan{Name: ExportName, Config: mc}
	if tokenizerPath != "" {
		tok, tmpl, err := loader.OpenTokenizer(tokenizerPath)
		if err != nil {
			return nil, fmt.Errorf("train: export: %w", err)
		}
		if tok.VocabSize() > mc.Vocab {
			return nil, fmt.Errorf("train: export: tokenizer %s has %d tokens, the model %d", tokenizerPath, tok.VocabSize(), mc.Vocab)
		}
		p.Vocab, p.ChatTemplate = tok.Vocab(), tmpl
	}
	shapes := mc.Shapes()
	if f := mc.Family(); f != nil && f.ConfigTensors != nil { // not trained: from the configuration
		weights = maps.Clone(weights)
		for _, t := range f.ConfigTensors(&mc) {
			w, err := t.Float32()
			if err != nil {
				return nil, fmt.Errorf("train: export: %s: %w", t.Name, err)
			}
			weights[t.Name] = w
		}
	}
	for _, name := range convert.OrderNames(shapes) {
		shape := shapes[name]
		w, ok := weights[name]
		if n := product(shape); !ok || len(w) != n {
			return nil, fmt.Errorf("train: export: %s: %d values, shape %v wants %d", name, len(w), shape, n)
		}
		t := &tensor.Tensor{Name: name, Type: tensor.F32, Shape: slices.Clone(shape), Data: f32Bytes(w)}
		p.Tensors = append(p.Tensors, convert.Tensor{Name: name, Type: tensor.F32, Shape: t.Shape,
			Load: func() (*tensor.Tensor, error) { return t, nil }})
	}
	return p, nil
}

func product(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Format is an export format.
type Format int

const (
	GGUF Format = iota // one GGUF file
	HF                 // a Hugging Face directory (config.json, safetensors, tokenizer.json)
)

// Export writes the current weights to out in format f with weight type typ ("" = f32). In a
// distributed run every rank calls it (the weights are gathered) and rank 0 writes.
func (t *Trainer) Export(out string, f Format, typ string) error {
	ts, err := t.gather(t.stateParts(false))
	if err != nil {
		return err
	}
	if !t.par.writes() {
		return nil
	}
	ws := map[string][]float32{}
	for _, x := range ts {
		ws[strings.TrimPrefix(x.name, "param.")] = x.data
	}
	p, err := Plan(t.Model, ws, t.data.TokenizerPath)
	if err != nil {
		return err
	}
	return writePlan(out, f, p, typ)
}

// ExportCheckpoint writes a checkpoint's weights to out, as Export; tokenizerPath overrides
// the checkpoint's own tokenizer.json and name ExportName when not "".
func ExportCheckpoint(ck *Checkpoint, out string, f Format, typ, tokenizerPath, name string) error {
	if tokenizerPath == "" {
		tokenizerPath = ck.TokenizerPath
	}
	ws := map[string][]float32{}
	for name := range nn.TrainedShapes(&ck.State.Model) {
		ws[name] = ck.Tensors["param."+name]
	}
	p, err := Plan(ck.State.Model, ws, tokenizerPath)
	if err != nil {
		return err
	}
	if name != "" {
		p.Name = name
	}
	return writePlan(out, f, p, typ)
}

func writePlan(out string, f Format, p *convert.Plan, typ string) error {
	if typ == "" {
		typ = "f32"
	}
	write := convert.WriteGGUF
	if f == HF {
		write = convert.WriteHF
	}
	if err := write(out, p, convert.Options{Type: typ}); err != nil {
		return fmt.Errorf("train: export %s: %w", out, err)
	}
	return nil
}
