// Test of the engine with package spec's n-gram proposer (an external test: spec imports
// engine): greedy output with speculation equals greedy output without it, token for token,
// for 32 concurrent requests whose prompts repeat themselves (so lookups hit), in batch
// invariant mode.
package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/spec"
)

func TestNGramGreedyMatches(t *testing.T) {
	b, err := loader.Open(fixture.Path(t, "models", "stories260K", "stories260K.bin"), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var reqs []engine.Request
	for i := range 32 {
		text := fmt.Sprintf("Tom had %d red balls. Tom had %d red balls and a dog. The dog", i, i+1)
		reqs = append(reqs, engine.Request{ID: fmt.Sprint(i), Prompt: b.Tok.Encode(text, true, false), MaxTokens: 24 + i%9})
	}
	run := func(p engine.Proposer) (map[string][]int, engine.Stats) {
		o := engine.DefaultOptions()
		o.BatchInvariant = true
		o.Scheduler.NumBlocks = 512
		if p != nil {
			o.Speculative = engine.SpecOptions{Proposer: p, NumTokens: 4, DisableByBatchSize: -1}
		}
		e, err := engine.New(b.Model, b.Tok, o)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, r := range reqs {
			ch, err := e.Add(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				var toks []int
				for o := range ch {
					toks = append(toks, o.TokenIDs...)
				}
				mu.Lock()
				out[r.ID] = toks
				mu.Unlock()
			})
		}
		wg.Wait()
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := e.Stats()
		if st.FreeBlocks != st.NumBlocks {
			t.Errorf("%d of %d blocks free", st.FreeBlocks, st.NumBlocks)
		}
		return out, st
	}
	want, plain := run(nil)
	g, err := spec.NewNGram(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, st := run(g)
	for _, r := range reqs {
		if !slices.Equal(got[r.ID], want[r.ID]) {
			t.Errorf("request %s:\n with n-gram %v\n without    %v", r.ID, got[r.ID], want[r.ID])
		}
	}
	if st.Spec.Drafts == 0 || st.Spec.AcceptedTokens == 0 {
		t.Errorf("spec stats %+v", st.Spec)
	}
	t.Logf("%d steps with n-gram, %d without; spec %+v", st.Steps, plain.Steps, st.Spec)
}
