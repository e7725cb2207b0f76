package perf

import (
	"testing"
	"time"

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

func TestStepPercentiles(t *testing.T) {
	steps := []time.Duration{5, 1, 4, 2, 3, 10, 6, 7, 9, 8}
	got := StepPercentiles(steps, 0, 10, 50, 90, 100)
	want := []time.Duration{1, 1, 5, 9, 10}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("percentiles %v = %v, want %v", []float64{0, 10, 50, 90, 100}, got, want)
			break
		}
	}
	if steps[0] != 5 {
		t.Error("StepPercentiles sorted its argument in place")
	}
	if got := StepPercentiles(nil, 50); got[0] != 0 {
		t.Errorf("no steps: %v, want 0", got)
	}
}

func TestOnCPUSteps(t *testing.T) {
	steps := []time.Duration{10, 10, 20, 10}
	cpu := []time.Duration{20, 19, 20, 18}
	got := OnCPUSteps(steps, cpu, 2, 0.95)
	if len(got) != 2 || got[0] != 10 || got[1] != 10 {
		t.Errorf("OnCPUSteps = %v, want the first two steps [10 10]", got)
	}
	if got := OnCPUSteps(steps, nil, 2, 0.95); len(got) != 0 {
		t.Errorf("no CPU times: %v, want none", got)
	}
}
