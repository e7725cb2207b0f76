package model_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
)

// checkKVTypes compares the paged logits of m's quantized KV caches with the f32 cache's.
func checkKVTypes(t *testing.T, m *model.Model, seqs [][]int, pre []int, tol float64) {
	t.Helper()
	want := pagedLogits(t, m, seqs, pre)
	defer func() { m.KVCacheDType = kernels.KVF32 }()
	for _, typ := range []kernels.KVDType{kernels.KVF16, kernels.KVBF16, kernels.KVQ8, kernels.KVFP8} {
		if err := m.SetKVCacheDType(typ); err != nil {
			t.Fatal(err)
		}
		got := pagedLogits(t, m, seqs, pre)
		d, a := 0.0, 0.0
		for i := range got {
			d = max(d, math.Abs(float64(got[i]-want[i])))
			a = max(a, math.Abs(float64(want[i])))
		}
		lim := tol * map[kernels.KVDType]float64{kernels.KVF16: 0.1, kernels.KVBF16: 1, kernels.KVQ8: 1, kernels.KVFP8: 4}[typ] // e4m3 keeps 3 mantissa bits
		if d > lim*a {
			t.Errorf("%v: max |logit - f32 cache's| = %g, more than %g of the largest %g", typ, d, lim, a)
		}
	}
}

// TestKVCacheDTypeGemma2 runs Gemma 2's windowed, soft-capped attention on every KV cache type.
func TestKVCacheDTypeGemma2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.gguf")
	if err := convert.WriteGGUF(path, gemma2Plan(t, 5), convert.Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	m := b.Model
	m.Pool = kernels.NewPool(2)
	r := rand.New(rand.NewPCG(8, 9))
	seqs := make([][]int, 2)
	for i, n := range []int{23, 17} {
		for range n {
			seqs[i] = append(seqs[i], r.IntN(m.Config.Vocab))
		}
	}
	checkKVTypes(t, m, seqs, []int{9, 6}, 0.05)
}

// TestKVCacheDTypeMLA runs DeepSeek 2's latent cache on every KV cache type.
func TestKVCacheDTypeMLA(t *testing.T) {
	o := deepseek2Synth
	o.Layers, o.DenseLead = 3, 1
	o.Experts, o.ExpertsUsed = 5, 3
	bd, err := loader.Open(writeMixtral(t, t.TempDir(), o), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bd.Close() })
	m := bd.Model
	m.Pool = kernels.Serial
	seqs := [][]int{{5, 17, 200, 3, 3, 44, 101, 9, 250, 31, 7}, {7, 8, 9, 250, 1, 60, 61}}
	checkKVTypes(t, m, seqs, []int{5, 3}, 0.05)
	if err := m.SetKVCacheDType(kernels.KVQ8); err != nil {
		t.Fatal(err)
	}
	defer func() { m.KVCacheDType = kernels.KVF32 }()
	kd, vd := m.Config.CacheDims()
	if got, want := m.KVBytesPerTokenCache(), int64(m.Config.Layers)*int64(kd+2*(kd/32)); vd != 0 || kd%32 == 0 && got != want {
		t.Errorf("MLA q8_0 cache: %d bytes per token, want %d (rows of %d+%d)", got, want, kd, vd)
	}
}
