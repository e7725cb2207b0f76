package engine

import (
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/model"
)

// TestStepTimer runs steps of growing size on a small random model: more tokens in the batch
// take longer (the medians of a few alternating runs), and a shape larger than the pool fails.
func TestStepTimer(t *testing.T) {
	cfg := model.Config{Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 32, FFN: 256,
		Vocab: 512, CtxLen: 1024, RopeTheta: 10000, NormEps: 1e-5}
	m := randomModel(t, cfg, 1)
	st, err := NewStepTimer(m, Config{NumBlocks: 128, BlockSizeTokens: 16})
	if err != nil {
		t.Fatal(err)
	}
	small := StepShape{Decode: []int{16}}
	large := StepShape{Prefill: []Chunk{{Tokens: 256, Context: 256}}, Decode: []int{100, 200, 300}}
	if large.NumTokens() != 259 {
		t.Fatalf("NumTokens %d, want 259", large.NumTokens())
	}
	var ts [2][]time.Duration
	for range 5 {
		for i, s := range []StepShape{small, large} {
			d, err := st.Run(s)
			if err != nil {
				t.Fatal(err)
			}
			ts[i] = append(ts[i], d)
		}
	}
	if a, b := minDur(ts[0]), minDur(ts[1]); b <= a {
		t.Errorf("a 259-token step (%v) not slower than a 1-token one (%v)", b, a)
	}
	if _, err := st.Run(StepShape{Decode: []int{128*16 + 1}}); err == nil {
		t.Error("a decode past the pool's blocks ran")
	}
	if _, err := st.Run(StepShape{Decode: []int{0}}); err == nil {
		t.Error("a decode without context ran")
	}
}

func minDur(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = min(m, d)
	}
	return m
}
