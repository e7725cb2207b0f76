// Tests of absurd model files: a generator writes a small valid GGUF (the repo's own GGUF
// writer) and Hugging Face directory (synth), then rewrites one size to an absurd value. Each
// must give a clear error, or for a huge context length load fine with a maximum model length
// capped by the KV pool, within 1 s and 100 MB of allocation.
package loader_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/synth"
)

// absurdBase writes a tiny llama model as GGUF and as a Hugging Face directory.
func absurdBase(t *testing.T) (ggufPath, hfDir string) {
	t.Helper()
	o := synth.Options{Arch: "llama", Dim: 32, Layers: 2, Heads: 2, KVHeads: 1, Seed: 7}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ggufPath = filepath.Join(dir, "base.gguf")
	if err := convert.WriteGGUF(ggufPath, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	hfDir = filepath.Join(dir, "hf")
	if err := convert.WriteHF(hfDir, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	return ggufPath, hfDir
}

// absurdGGUF rewrites base with metadata key set to v (added when absent).
func absurdGGUF(t *testing.T, base, key string, v gguf.Value) string {
	t.Helper()
	f, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kvs := append([]gguf.KV(nil), f.KVs...)
	found := false
	for i := range kvs {
		if kvs[i].Key == key {
			kvs[i].Value, found = v, true
		}
	}
	if !found {
		kvs = append(kvs, gguf.KV{Key: key, Value: v})
	}
	out := filepath.Join(t.TempDir(), "absurd.gguf")
	if err := gguf.WriteFile(out, kvs, f.Tensors); err != nil {
		t.Fatal(err)
	}
	return out
}

// absurdHF copies the directory base with config.json's key set to v.
func absurdHF(t *testing.T, base, key string, v any) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "hf")
	if err := os.CopyFS(out, os.DirFS(base)); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(out, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg[key] = v
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// measure runs f and returns its wall time and the bytes it allocated.
func measure(f func()) (time.Duration, uint64) {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	start := time.Now()
	f()
	d := time.Since(start)
	runtime.ReadMemStats(&b)
	return d, b.TotalAlloc - a.TotalAlloc
}

func TestAbsurdModelFiles(t *testing.T) {
	base, hf := absurdBase(t)
	cases := []struct {
		name, path string
		wantErr    string // "" = loads, with max model len capped by the KV pool
	}{
		{"gguf context 1e7", absurdGGUF(t, base, "llama.context_length", gguf.U32(10_000_000)), ""},
		{"gguf context 2^32-1", absurdGGUF(t, base, "llama.context_length", gguf.U32(1<<32-1)), ""},
		{"gguf context 2^64-1", absurdGGUF(t, base, "llama.context_length", gguf.U64(1<<64-1)), "context_length"},
		{"gguf layers 1e9", absurdGGUF(t, base, "llama.block_count", gguf.U32(1_000_000_000)), "Layers"},
		{"gguf layers 3 (2 in the file)", absurdGGUF(t, base, "llama.block_count", gguf.U32(3)), "blk.2"},
		{"gguf heads 0", absurdGGUF(t, base, "llama.attention.head_count", gguf.U32(0)), "head_count"},
		{"gguf heads 2^31", absurdGGUF(t, base, "llama.attention.head_count", gguf.U32(1<<31)), "HeadDim = 0"},
		{"gguf dim 2^30", absurdGGUF(t, base, "llama.embedding_length", gguf.U32(1<<30)), "Dim"},
		{"gguf dim -5", absurdGGUF(t, base, "llama.embedding_length", gguf.I32(-5)), "embedding_length"},
		{"gguf ffn 2^31", absurdGGUF(t, base, "llama.feed_forward_length", gguf.U32(1<<31)), "FFN"},
		{"gguf ffn mismatch", absurdGGUF(t, base, "llama.feed_forward_length", gguf.U32(96)), "ffn_"},
		{"hf max_position_embeddings 2e9", absurdHF(t, hf, "max_position_embeddings", 2e9), ""},
		{"hf layers 1e9", absurdHF(t, hf, "num_hidden_layers", 1e9), "Layers"},
		{"hf layers 4096 (2 in the files)", absurdHF(t, hf, "num_hidden_layers", 4096), "lack"},
		{"hf heads 0", absurdHF(t, hf, "num_attention_heads", 0), "num_attention_heads"},
		{"hf hidden -64", absurdHF(t, hf, "hidden_size", -64), "hidden_size"},
		{"hf hidden 2^40", absurdHF(t, hf, "hidden_size", 1<<40), "Dim"},
		{"hf intermediate 1e12", absurdHF(t, hf, "intermediate_size", 1e12), "FFN"},
		{"hf vocab 2^30", absurdHF(t, hf, "vocab_size", 1<<30), "Vocab"},
		{"hf vocab mismatch", absurdHF(t, hf, "vocab_size", 300), "model.embed_tokens.weight"},
		{"hf max_position_embeddings -1", absurdHF(t, hf, "max_position_embeddings", -1), "max_position_embeddings"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			var maxLen, ctx int
			d, alloc := measure(func() {
				var b *loader.Bundle
				if b, err = loader.Open(tc.path, loader.Options{}); err != nil {
					return
				}
				defer b.Close()
				ctx = b.Model.Config.CtxLen
				var e *engine.Engine
				if e, err = engine.New(b.Model, b.Tok, engine.DefaultOptions()); err != nil {
					return
				}
				maxLen = e.Config().MaxModelLenTokens
				e.Shutdown(context.Background())
			})
			if d > time.Second || alloc > 100<<20 {
				t.Errorf("took %v and allocated %d MB", d, alloc>>20)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("want a model with a capped length, got %v", err)
				}
				pool := engine.DefaultConfig().NumBlocks * engine.DefaultConfig().BlockSizeTokens
				if ctx < 1_000_000 || maxLen != pool {
					t.Errorf("context %d: max model len %d, want the pool's %d", ctx, maxLen, pool)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
			}
			t.Logf("%v (%v, %d KB)", err, d, alloc>>10)
		})
	}
}
