// Tests of sizeKV: the model's context length never sizes the KV pool; --max-model-len and
// --kv-cache-memory are honoured or refused with a message; and inspect of an absurd config
// exits 1 at once.
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

func TestSizeKVAbsurdContext(t *testing.T) {
	// 2 layers x 1 KV head x 16 dims x f32 x (K, V) = 256 B per token.
	mc := model.Config{Layers: 2, KVHeads: 1, HeadDim: 16}
	const budget = 8 << 20 // 32768 tokens, 2048 blocks
	cases := []struct {
		name         string
		ctx, maxLen  int
		kvBytes      int64
		wantLen      int
		wantBlocks   int
		wantNote     bool
		wantErrMatch string
	}{
		{"small context: the default pool", 512, 0, 0, 512, 1024, false, ""},
		{"context 1e7: capped by the budget", 10_000_000, 0, 0, 32768, 2048, true, ""},
		{"context 2^32-1: capped by the budget", 1<<32 - 1, 0, 0, 32768, 2048, true, ""},
		{"context 2e9, --kv-cache-memory 64KiB", 2_000_000_000, 0, 64 << 10, 256, 16, true, ""},
		{"--max-model-len within budget", 10_000_000, 2048, 0, 2048, 1024, false, ""},
		{"--max-model-len grows the pool", 10_000_000, 20000, 0, 20000, 1250, false, ""},
		{"--max-model-len beyond budget", 10_000_000, 1 << 20, 0, 0, 0, false, "--max-model-len 1048576"},
		{"--kv-cache-memory below one block", 512, 0, 100, 0, 0, false, "not one block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := engine.DefaultConfig()
			sc.NumBlocks = 1024
			sc.BlockSizeTokens = 16
			c := mc
			c.CtxLen = tc.ctx
			note, err := sizeKV(&sc, &c, kernels.KVF32, tc.maxLen, tc.kvBytes, budget)
			if tc.wantErrMatch != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrMatch) {
					t.Fatalf("error %v, want %q", err, tc.wantErrMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc.MaxModelLenTokens != tc.wantLen || sc.NumBlocks != tc.wantBlocks || (note != "") != tc.wantNote {
				t.Errorf("max len %d, blocks %d, note %q; want %d, %d, note %v", sc.MaxModelLenTokens, sc.NumBlocks, note, tc.wantLen, tc.wantBlocks, tc.wantNote)
			}
			if err := sc.Validate(); err != nil {
				t.Errorf("scheduler config: %v", err)
			}
		})
	}
	if b := defaultKVBudget(); b <= 0 {
		t.Errorf("default KV budget %d", b)
	}
}

func TestInspectAbsurdConfigFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hf")
	if _, errs, code := runCmd(t, "synth", "--layers", "1", "--dim", "32", "--heads", "2", "-o", dir); code != 0 {
		t.Fatalf("synth: exit %d %s", code, errs)
	}
	p := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["num_hidden_layers"] = 1e9
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	start := time.Now()
	_, errs, code := runCmd(t, "inspect", dir)
	d := time.Since(start)
	runtime.ReadMemStats(&b)
	if code != 1 || !strings.Contains(errs, "Layers = 1000000000") {
		t.Errorf("inspect: exit %d, stderr %q", code, errs)
	}
	if d > time.Second || b.TotalAlloc-a.TotalAlloc > 100<<20 {
		t.Errorf("inspect took %v and %d MB", d, (b.TotalAlloc-a.TotalAlloc)>>20)
	}
}
