// This file holds what every family's builder starts with: the graph builder, the three
// inputs of the builder contract (docs/adding-a-family.md: tokens, pos, logit_rows) and the
// weight declarations by GGUF name (matrices in the type the caller's dtype gives, stacked
// experts, F32 vectors).
package model

import (
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// netBuilder is a graph builder with the contract's inputs declared.
type netBuilder struct {
	*graph.Builder
	cfg               *Config
	dtype             func(name string) tensor.DType
	n, s              graph.Dim // the batch's rows and logit rows
	tokens, pos, rows *graph.Value
}

// newNetBuilder starts cfg's graph: tokens i32[n], pos i32[n], logit_rows i32[s].
func newNetBuilder(cfg *Config, dtype func(name string) tensor.DType) *netBuilder {
	nb := &netBuilder{Builder: graph.NewBuilder(cfg.Arch), cfg: cfg, dtype: dtype}
	n, s := graph.Sym("n"), graph.Sym("s") // the batch's rows and logit rows
	nb.tokens = nb.Input(InputTokens, graph.T(tensor.I32, n))
	nb.pos = nb.Input(InputPositions, graph.T(tensor.I32, n))
	nb.rows = nb.Input(InputLogitRows, graph.T(tensor.I32, s))
	return nb
}

// mat declares a [rows, cols] weight matrix of the type dtype gives name.
func (nb *netBuilder) mat(name string, rows, cols int) *graph.Value {
	return nb.Weight(name, graph.T(nb.dtype(name), graph.D(rows), graph.D(cols)))
}

// experts declares a stacked [Experts, rows, cols] expert weight.
func (nb *netBuilder) experts(name string, rows, cols int) *graph.Value {
	return nb.Weight(name, graph.T(nb.dtype(name), graph.D(nb.cfg.Experts), graph.D(rows), graph.D(cols)))
}

// vec declares an F32 weight of the given shape (a vector unless more sizes are given).
func (nb *netBuilder) vec(name string, size ...int) *graph.Value {
	dims := make([]graph.Dim, len(size))
	for i, d := range size {
		dims[i] = graph.D(d)
	}
	return nb.Weight(name, graph.T(tensor.F32, dims...))
}
