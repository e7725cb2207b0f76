package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
	"github.com/llmcloud/llmcloud/synth"
)

func kvTransferEngine(t *testing.T, m *model.Model, numBlocks int) *Engine {
	t.Helper()
	o := DefaultOptions()
	o.BatchInvariant = true
	o.Scheduler.MaxNumBatchedTokens = 64 // the prompt is prefilled in several chunks
	o.Scheduler.NumBlocks = numBlocks
	o.Scheduler.MaxModelLenTokens = 256
	e, err := New(m, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdownAndCheck(t, e) })
	return e
}

func greedy(id string, prompt []int, n int) Request {
	return Request{ID: id, Prompt: prompt, MaxTokens: n, IgnoreEOS: true, Params: sample.Params{Temperature: 0}}
}

// TestKVTransferEngines: a prompt prefilled by one engine (a request with one output token, as
// a prefill replica runs it), exported and imported by another, continues there to exactly the
// greedy tokens a lone engine gives, and the consumer computed only the prompt's last partial
// block; for f32, f16 and q8_0 caches. The producer's request holds its KV (HoldKV): the first
// export hands that copy over and forgets it, a second copies the cache, the same bytes. No
// block stays referenced anywhere.
func TestKVTransferEngines(t *testing.T) {
	m := synthModel(t, synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
		Vocab: 300, CtxLen: 256, Seed: 5, Std: 0.3})
	prompt := make([]int, 150)
	for i := range prompt {
		prompt[i] = (i*37 + 11) % 200
	}
	for _, typ := range []kernels.KVDType{kernels.KVF32, kernels.KVF16, kernels.KVQ8} {
		t.Run(typ.String(), func(t *testing.T) {
			if err := m.SetKVCacheDType(typ); err != nil {
				t.Fatal(err)
			}
			defer func() { m.KVCacheDType = kernels.KVF32 }()
			alone := kvTransferEngine(t, m, 64)
			want := runAll(t, alone, []Request{greedy("a", prompt, 12)})["a"]

			prod := kvTransferEngine(t, m, 64)
			pr := greedy("p", prompt, 1)
			pr.HoldKV = true
			first := runAll(t, prod, []Request{pr})["p"]
			if first.tokens[0] != want.tokens[0] {
				t.Fatalf("producer's first token %d, alone %d", first.tokens[0], want.tokens[0])
			}
			prod.mu.Lock()
			held, heldBytes := len(prod.held), prod.heldBytes
			prod.mu.Unlock()
			if held != 1 || heldBytes == 0 {
				t.Fatalf("%d copies (%d bytes) held after the HoldKV request", held, heldBytes)
			}
			blocks, err := prod.ExportKV(context.Background(), prompt, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			if n := (len(prompt) - 1) / 16; len(blocks) != n {
				t.Fatalf("exported %d blocks, want %d", len(blocks), n)
			}
			prod.mu.Lock()
			held, heldBytes = len(prod.held), prod.heldBytes
			prod.mu.Unlock()
			if held != 0 || heldBytes != 0 {
				t.Errorf("after the export %d copies (%d bytes) still held", held, heldBytes)
			}
			again, err := prod.ExportKV(context.Background(), prompt, "", 0) // from the cache this time
			if err != nil || len(again) != len(blocks) {
				t.Fatalf("second export: %d blocks, %v", len(again), err)
			}
			for i := range again {
				if !slices.Equal(again[i], blocks[i]) {
					t.Fatalf("block %d: the held copy and the cache differ", i)
				}
			}
			cons := kvTransferEngine(t, m, 64)
			r := greedy("c", prompt, 12)
			r.ImportKV = blocks
			got := runAll(t, cons, []Request{r})["c"]
			if !slices.Equal(got.tokens, want.tokens) {
				t.Fatalf("through the transfer %v, alone %v", got.tokens, want.tokens)
			}
			if got.final.CachedTokens != len(blocks)*16 {
				t.Errorf("consumer's cached tokens %d, want %d", got.final.CachedTokens, len(blocks)*16)
			}
			if st := cons.Stats(); st.PrefillTokens != int64(len(prompt)-len(blocks)*16) {
				t.Errorf("consumer prefilled %d tokens, want %d", st.PrefillTokens, len(prompt)-len(blocks)*16)
			}
		})
	}
}

// TestKVTransferImportErrors: rows of the wrong size are refused by Add with a message naming
// the sizes; rows for a salt other than the request's are installed under the request's salt
// only (a salt is the cache key, not a check); a smaller pool takes the import and gives the
// producer's own greedy tokens.
func TestKVTransferImportErrors(t *testing.T) {
	m := synthModel(t, synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128,
		Vocab: 300, CtxLen: 256, Seed: 6, Std: 0.3})
	prompt := make([]int, 100)
	for i := range prompt {
		prompt[i] = (i*13 + 7) % 200
	}
	prod := kvTransferEngine(t, m, 64)
	want := runAll(t, prod, []Request{greedy("p", prompt, 8)})["p"]
	blocks, err := prod.ExportKV(context.Background(), prompt, "", 0)
	if err != nil || len(blocks) != 6 {
		t.Fatalf("export: %d blocks, %v", len(blocks), err)
	}
	if other, _ := prod.ExportKV(context.Background(), prompt, "salt", 0); len(other) != 0 {
		t.Errorf("export under another salt gave %d blocks", len(other))
	}
	cons := kvTransferEngine(t, m, 16)
	bad := greedy("bad", prompt, 4)
	bad.ImportKV = [][]byte{blocks[0][:len(blocks[0])-1]}
	if _, err := cons.Add(context.Background(), bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("block 0 is %d bytes", len(blocks[0])-1)) {
		t.Errorf("truncated block: %v", err)
	}
	r := greedy("c", prompt, 8)
	r.ImportKV = blocks
	got := runAll(t, cons, []Request{r})["c"]
	if !slices.Equal(got.tokens, want.tokens) {
		t.Fatalf("through the transfer %v, alone %v", got.tokens, want.tokens)
	}
}
