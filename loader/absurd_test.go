// Tests of absurd model files: internal/absurd writes a small valid GGUF (the repo's own GGUF
// writer) and Hugging Face directory (synth), then rewrites one size to an absurd value. Each
// must give a clear error, or for a huge context length load fine with a maximum model length
// capped by the KV pool, within 1 s and 100 MB of allocation.
package loader_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/absurd"
	"github.com/llmcloud/llmcloud/loader"
)

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
	cases, err := absurd.Cases(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			var err error
			var maxLen, ctx int
			d, alloc := measure(func() {
				var b *loader.Bundle
				if b, err = loader.Open(tc.Path, loader.Options{}); err != nil {
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
			if tc.Want == "" {
				if err != nil {
					t.Fatalf("want a model with a capped length, got %v", err)
				}
				pool := engine.DefaultConfig().NumBlocks * engine.DefaultConfig().BlockSizeTokens
				if ctx < 1_000_000 || maxLen != pool {
					t.Errorf("context %d: max model len %d, want the pool's %d", ctx, maxLen, pool)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.Want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.Want)
			}
			t.Logf("%v (%v, %d KB)", err, d, alloc>>10)
		})
	}
}
