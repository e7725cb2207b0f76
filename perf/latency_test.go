package perf

import (
	"testing"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// TestStatsExperts: a decode step reads experts_used of the stacked experts, every other
// linear weight, and not the (untied) embedding table.
func TestStatsExperts(t *testing.T) {
	f32 := func(shape ...int) *tensor.Tensor {
		n := 4
		for _, d := range shape {
			n *= d
		}
		return &tensor.Tensor{Type: tensor.F32, Shape: shape, Data: make([]byte, n)}
	}
	m := &model.Model{Config: model.Config{Experts: 4, ExpertsUsed: 2}, Weights: map[string]*tensor.Tensor{
		"token_embd.weight":          f32(10, 16),
		"blk.0.attn_q.weight":        f32(16, 16),
		"blk.0.ffn_gate_exps.weight": f32(4, 8, 16),
		"blk.0.attn_norm.weight":     f32(16),
	}}
	s := Stats(m)
	if want := int64(16*16*4 + 2*8*16*4); s.DecodeBytes != want {
		t.Errorf("DecodeBytes %d, want %d", s.DecodeBytes, want)
	}
	if want := int64((10*16 + 16*16 + 4*8*16 + 16) * 4); s.Bytes != want {
		t.Errorf("Bytes %d, want %d", s.Bytes, want)
	}
}
