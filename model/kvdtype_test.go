package model

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

var kvTestTypes = []kernels.KVDType{kernels.KVF16, kernels.KVBF16, kernels.KVQ8, kernels.KVFP8}

// kvLogitTol is the largest logit difference from the f32 cache each type may make on the
// test models, relative to the largest logit: random weights amplify small differences (and
// with Q8_0 weights flip roundings of the quantized activations), so these are loose; the
// kernels are checked exactly (kernels/kvcache_test.go) and the quality by perplexity.
var kvLogitTol = map[kernels.KVDType]float64{kernels.KVF16: 2e-2, kernels.KVBF16: 5e-2, kernels.KVQ8: 6e-2, kernels.KVFP8: 0.2}

// TestKVCacheDTypeForward runs Forward and the paged batch on every KV cache type: the logits
// stay near the f32 cache's, the pools take the format's bytes, and batch invariance holds
// (a sequence alone and staggered among others gives bit-identical logits).
func TestKVCacheDTypeForward(t *testing.T) {
	for name, m := range batchModels(t) {
		prompts := randPrompts(m, []int{3, 17, 30, 9}, 5)
		for _, typ := range kvTestTypes {
			t.Run(name+"/"+typ.String(), func(t *testing.T) {
				// The f32 cache's logits, computed here rather than once: building the paged
				// batch (below) registers the model's Q8_0 weights for the prefill packs, whose
				// kernels round differently from the stored rows' (AMX, docs/kernels-quant.md),
				// so both sides must run in the same state.
				want := make([][]float32, len(prompts))
				for i, p := range prompts {
					l, err := m.Forward(m.NewCache(len(p)), p, 0, true)
					if err != nil {
						t.Fatal(err)
					}
					want[i] = l
				}
				if err := m.SetKVCacheDType(typ); err != nil {
					t.Fatal(err)
				}
				defer func() { m.KVCacheDType = kernels.KVF32 }()
				for i, p := range prompts {
					c := m.NewCache(len(p))
					if c.KQ == nil || c.K[0] != nil {
						t.Fatal("the cache is not quantized")
					}
					got, err := m.Forward(c, p, 0, true)
					if err != nil {
						t.Fatal(err)
					}
					d, a := 0.0, 0.0
					for v := range got {
						d = max(d, math.Abs(float64(got[v]-want[i][v])))
						a = max(a, math.Abs(float64(want[i][v])))
					}
					if d > kvLogitTol[typ]*a {
						t.Errorf("prompt %d: max |logit - f32 cache's| = %g > %g of the largest %g", i, d, kvLogitTol[typ], a)
					}
				}
				kv, err := m.NewPagedKV(10, 4)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := kv.Bytes(), 40*m.KVBytesPerTokenCache(); got != want || want >= 40*m.Config.KVBytesPerToken(2)+1 && typ != kernels.KVF16 && typ != kernels.KVBF16 {
					t.Errorf("pool of 40 tokens holds %d bytes, want %d (f16: %d)", got, want, 40*m.Config.KVBytesPerToken(2))
				}
				// batch invariance
				alone := make([][][]float32, len(prompts))
				for i, p := range prompts {
					s := newPagedSim(t, m, 1, 30, 4, uint64(i), true)
					s.toks[0] = append([]int(nil), p...)
					s.step(t, []int{len(p)})
					for range 3 {
						s.step(t, []int{1})
					}
					alone[i] = s.logits[0]
				}
				s := newPagedSim(t, m, len(prompts), 80, 4, 99, true)
				for i, p := range prompts {
					s.toks[i] = append([]int(nil), p...)
				}
				for st := 0; ; st++ {
					n := make([]int, len(prompts))
					busy := false
					for i := range prompts {
						if st < i || len(s.logits[i]) > 3 {
							continue
						}
						n[i] = min(5, len(s.toks[i])-s.done[i])
						busy = true
					}
					if !busy {
						break
					}
					s.step(t, n)
				}
				for i := range prompts {
					for k := range alone[i] {
						for v := range alone[i][k] {
							if alone[i][k][v] != s.logits[i][k][v] {
								t.Fatalf("seq %d logits %d token %d: alone %v, batched %v", i, k, v, alone[i][k][v], s.logits[i][k][v])
							}
						}
					}
				}
			})
		}
	}
}
