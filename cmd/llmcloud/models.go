// The models command: what the built-in default model is (name, file, size, parameters,
// architecture, sampling defaults) and how to run another model instead.
package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/perf"
)

func init() {
	register("models", "list the built-in default model (used when a command is given none) and how to pass another", runModels)
}

type modelsEntry struct {
	Name         string  `json:"name"`
	Default      bool    `json:"default"`
	Path         string  `json:"path"`
	Bytes        int64   `json:"bytes"`
	Params       int64   `json:"params"`
	Architecture string  `json:"architecture"`
	Layers       int     `json:"layers"`
	Dim          int     `json:"dim"`
	Context      int     `json:"context_length"`
	Vocab        int     `json:"vocab_size"`
	WeightType   string  `json:"weight_type"`
	ChatTemplate bool    `json:"chat_template"`
	Temperature  float64 `json:"temperature"`
	TopP         float64 `json:"top_p"`
	ModelSamples bool    `json:"sampling_from_model"` // false: llmcloud's fallback
}

func runModels(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("models", stderr)
	asJSON := fs.Bool("json", false, "machine-readable output")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	path, err := defaultmodel.Path()
	if err != nil {
		return err
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	c, st, p := b.Model.Config, perf.Stats(b.Model), b.Defaults.Params()
	e := modelsEntry{Name: defaultmodel.Name, Default: true, Path: path, Bytes: int64(len(defaultmodel.Bytes())),
		Params: st.Params, Architecture: c.Arch, Layers: c.Layers, Dim: c.Dim, Context: c.CtxLen, Vocab: c.Vocab,
		WeightType: st.Type, ChatTemplate: b.ChatTemplate != "", Temperature: p.Temperature, TopP: p.TopP,
		ModelSamples: b.Defaults.Temperature != nil || b.Defaults.TopP != nil}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode([]modelsEntry{e})
	}
	samp := "llmcloud's fallback: the model sets none"
	if e.ModelSamples {
		samp = "the model's own"
	}
	tmpl := "none (chat uses a plain User:/Assistant: transcript)"
	if e.ChatTemplate {
		tmpl = "yes"
	}
	fmt.Fprintln(stdout, "built-in default model (used by every command given no model):")
	for _, row := range [][2]string{
		{"name", e.Name},
		{"file", e.Path},
		{"size", fmt.Sprintf("%s (%d bytes, %s weights)", perf.SizeString(e.Bytes), e.Bytes, e.WeightType)},
		{"parameters", fmt.Sprintf("%s (%d)", perf.ParamsString(e.Params), e.Params)},
		{"architecture", fmt.Sprintf("%s: %d layers, dim %d, context %d tokens, vocabulary %d", e.Architecture, e.Layers, e.Dim, e.Context, e.Vocab)},
		{"chat template", tmpl},
		{"sampling", fmt.Sprintf("temperature %g, top-p %g (%s)", e.Temperature, e.TopP, samp)},
		{"recipe", "recipes/default in the llmcloud source tree: how it was trained"},
	} {
		fmt.Fprintf(stdout, "  %-14s %s\n", row[0], row[1])
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "To use another model, pass a GGUF file, a Hugging Face directory or a llama2.c .bin:")
	fmt.Fprintln(stdout, "  llmcloud generate --model MODEL --prompt \"Once upon a time\"")
	fmt.Fprintln(stdout, "  llmcloud chat --model MODEL")
	fmt.Fprintln(stdout, "  llmcloud serve MODEL")
	fmt.Fprintln(stdout, "  llmcloud inspect MODEL")
	return nil
}
