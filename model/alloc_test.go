package model

import (
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/kernels"
)

// TestDecodeAllocs checks that a decode step with a reused cache and logits buffer allocates
// nothing in the model itself (the matmul kernels and the pool's fan-out may still allocate).
func TestDecodeAllocs(t *testing.T) {
	m, err := OpenGGUF(fixture.Path(t, "models", "rand3M", "rand3M-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Pool = kernels.Serial
	c := m.NewCache(64)
	logits, err := m.ForwardTo(nil, c, []int{1, 2, 3}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tok := []int{5}
	allocs := testing.AllocsPerRun(20, func() {
		if c.Len >= 60 {
			c.Len = 4
		}
		if logits, err = m.ForwardTo(logits, c, tok, c.Len, false); err != nil {
			t.Fatal(err)
		}
	})
	// Allocations inside kernels' MatMul (owned by the kernels) are not counted against the
	// model: measure one matmul call and allow that per linear layer.
	w := m.Weights["blk.0.attn_q.weight"]
	in := make([]float32, w.Shape[1])
	out := make([]float32, w.Shape[0])
	perMM := testing.AllocsPerRun(20, func() {
		if err := m.Pool.MatMul(out, in, w, 1); err != nil {
			t.Fatal(err)
		}
	})
	matmuls := float64(7*m.Config.Layers + 1)
	t.Logf("allocations per decode step (serial pool): %v, of which matmul %v x %v", allocs, perMM, matmuls)
	if allocs > perMM*matmuls {
		t.Errorf("decode allocates %v times per token beyond the matmuls", allocs-perMM*matmuls)
	}
}
