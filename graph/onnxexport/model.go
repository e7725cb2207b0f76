// This file exports a loaded model.Model: its graph (Model.Graph) with its weights dequantized
// to float32, and Llama 3's rope frequency factors taken from the file or computed from the
// config, as the model does at load.
package onnxexport

import (
	"fmt"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

// DefaultPositions is MaxPositions for a model whose config has no context length.
const DefaultPositions = 4096

// ExportModel converts m. opt.MaxPositions 0 means the model's context length.
func ExportModel(m *model.Model, opt Options) (*onnx.Model, error) {
	g, err := m.Graph()
	if err != nil {
		return nil, fmt.Errorf("onnxexport: %w", err)
	}
	cfg := &m.Config
	if opt.MaxPositions == 0 {
		opt.MaxPositions = cfg.CtxLen
		if opt.MaxPositions <= 0 {
			opt.MaxPositions = DefaultPositions
		}
	}
	if opt.DocString == "" {
		opt.DocString = fmt.Sprintf("%s: %d layers, dim %d, %d heads (%d KV) of %d, vocab %d; "+
			"input_ids int64 [batch, seq] at positions 0..seq-1 (seq <= %d) -> logits float32 [batch, seq, vocab]",
			cfg.Arch, cfg.Layers, cfg.Dim, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.Vocab, opt.MaxPositions)
	}
	weights := func(name string) ([]float32, []int, error) {
		if t := m.Weights[name]; t != nil {
			v, err := t.Float32()
			return v, t.Shape, err
		}
		if name == model.RopeFreqsName && cfg.RopeScaling != nil {
			f, err := kernels.Llama3Factors(cfg.HeadDim, cfg.RopeTheta, *cfg.RopeScaling)
			return f, []int{len(f)}, err
		}
		return nil, nil, fmt.Errorf("not in the model")
	}
	return Export(g, weights, opt)
}
