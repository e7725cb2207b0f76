package engine

import (
	"fmt"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/synth"
)

// TestKVCacheDTypeEngine serves Gemma 2's windowed layers (their own KV group) with quantized
// caches: KV groups and one pool give bit-identical tokens and logprobs (batch invariance
// holds on the quantized cache), every block is free afterwards (swaRun's cleanup), and
// the outputs stay near the f32 cache's.
func TestKVCacheDTypeEngine(t *testing.T) {
	m := gemma2Window(t, swaWindow)
	ref, _, _ := swaRun(t, m, nil, nil)
	for _, typ := range []kernels.KVDType{kernels.KVF16, kernels.KVQ8, kernels.KVFP8} {
		t.Run(typ.String(), func(t *testing.T) {
			if err := m.SetKVCacheDType(typ); err != nil {
				t.Fatal(err)
			}
			defer func() { m.KVCacheDType = kernels.KVF32 }()
			toks, lps, e := swaRun(t, m, nil, nil)
			if len(e.Config().KVGroups) != 2 {
				t.Fatalf("KV groups %+v", e.Config().KVGroups)
			}
			toks1, lps1, _ := swaRun(t, m, func(o *Options) { o.SingleKVPool = true }, nil)
			same := 0
			for i := range toks {
				if fmt.Sprint(toks[i], lps[i]) != fmt.Sprint(toks1[i], lps1[i]) {
					t.Errorf("request %d: KV groups and one pool differ:\n%v\n%v", i, toks[i], toks1[i])
				}
				for j := range toks[i] {
					if toks[i][j] != ref[i][j] {
						break
					}
					same++
				}
			}
			t.Logf("%v: %d of %d greedy tokens before the first difference from the f32 cache", typ, same, len(toks)*swaGen)
		})
	}
}

// TestKVCacheDTypeBudget: the same KV memory holds at least 1.8x the blocks in q8_0 and fp8
// as in fp16 (twice as many in fp16 as in f32), counted by the engine.
func TestKVCacheDTypeBudget(t *testing.T) {
	m := synthModel(t, synth.Options{Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256,
		Vocab: 300, CtxLen: 256, Seed: 3, Std: 0.3})
	blocks := map[kernels.KVDType]int{}
	for _, typ := range []kernels.KVDType{kernels.KVF32, kernels.KVF16, kernels.KVBF16, kernels.KVQ8, kernels.KVFP8} {
		if err := m.SetKVCacheDType(typ); err != nil {
			t.Fatal(err)
		}
		o := DefaultOptions()
		o.Scheduler.BlockSizeTokens = 16
		o.Scheduler.MaxModelLenTokens = 256
		o.KVCacheBytes = 4 << 20
		e, err := New(m, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		blocks[typ] = e.Config().NumBlocks
		shutdownAndCheck(t, e)
	}
	m.KVCacheDType = kernels.KVF32
	t.Logf("blocks of 16 tokens in 4 MiB: %v", blocks)
	if f16 := blocks[kernels.KVF16]; f16 < 2*blocks[kernels.KVF32] || blocks[kernels.KVBF16] != f16 ||
		float64(blocks[kernels.KVQ8]) < 1.8*float64(f16) || blocks[kernels.KVFP8] != blocks[kernels.KVQ8] {
		t.Errorf("blocks per type %v", blocks)
	}
}
