// This file is the entry point to a model's graph: BuildGraph writes a configuration's
// network with its family's builder (Family.Build: the Llama family's is llama_graph.go) over a
// ragged batch of n rows (token ids and their positions) whose logits are wanted for the rows
// listed in logit_rows. Serving runs it over the paged KV cache; training over whole sequences
// (the attention op is the same).
package model

import (
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// Graph inputs and output of every family's graph.
const (
	InputTokens    = "tokens"     // i32[n]: token ids, the batch's rows
	InputPositions = "pos"        // i32[n]: each row's position in its sequence
	InputLogitRows = "logit_rows" // i32[s]: the rows whose logits are wanted
	OutputLogits   = "logits"     // f32[s,vocab]
)

// BuildGraph writes cfg's network as a graph, with the builder of cfg's family. dtype gives a
// matrix weight's element type (nil: F32 for all); vectors (norms, biases, rope_freqs.weight)
// are F32, decoded at load. withFreqs declares rope_freqs.weight, the per-frequency RoPE
// divisors of Llama 3 (from the file or computed from cfg.RopeScaling). A builder's graph has
// the inputs and output above; its attention ops carry their layer number (the KV cache's)
// and its weights the names of cfg.Shapes().
func BuildGraph(cfg *Config, dtype func(name string) tensor.DType, withFreqs bool) (*graph.Graph, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if dtype == nil {
		dtype = func(string) tensor.DType { return tensor.F32 }
	}
	return cfg.Family().Build(cfg, dtype, withFreqs)
}

// Graph is m's network as a graph, with m's weight types.
func (m *Model) Graph() (*graph.Graph, error) {
	_, freqs := m.Weights[RopeFreqsName]
	return BuildGraph(&m.Config, func(name string) tensor.DType {
		if t := m.Weights[name]; t != nil {
			return t.Type
		}
		return tensor.F32
	}, freqs || m.Config.RopeScaling != nil)
}
