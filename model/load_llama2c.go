// This file implements LoadLlama2C: a llama2.c v0 checkpoint as a "llama" Model.
package model

import (
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/format/llama2c"
	"github.com/llmcloud/llmcloud/tensor"
)

// ConfigFromLlama2C maps a llama2.c header onto a Config (RoPE base 10000, adjacent-pair
// rotation, RMSNorm eps 1e-5, as llama2.c's run.c uses).
func ConfigFromLlama2C(h llama2c.Header) Config {
	return Config{
		Arch: "llama", Dim: h.Dim, Layers: h.Layers, Heads: h.Heads, KVHeads: h.KVHeads,
		HeadDim: h.HeadSize(), FFN: h.HiddenDim, Vocab: h.Vocab, CtxLen: h.SeqLen,
		RopeTheta: 10000, NormEps: 1e-5, Tied: h.Shared,
	}
}

// LoadLlama2C memory-maps the checkpoint at path; Close the model to release it.
func LoadLlama2C(path string) (*Model, error) {
	f, err := llama2c.Open(path)
	if err != nil {
		return nil, err
	}
	ws := map[string]*tensor.Tensor{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if !strings.HasPrefix(t.Name, "rope.") { // precomputed tables: RoPE is computed instead
			ws[t.Name] = t
		}
	}
	m, err := New(ConfigFromLlama2C(f.Header), ws)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.closer = f.Close
	return m, nil
}
