// The draft proposer in the engine: the default model drafting for itself among 32
// concurrent requests (batch invariant) gives the same greedy tokens as without speculation,
// every draft is accepted (greedy, and at temperature 1 where q = p), and after the requests
// finish every block of the engine's and of the draft's KV pool is free.
package spec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/sample"
)

func TestDraftInEngine(t *testing.T) {
	b := openBundle(t, defaultModelPath())
	prompts := []string{"Once upon a time", "Tom and his dog", "The sun was hot and", "Lily"}
	for _, temp := range []float64{0, 1} {
		var reqs []engine.Request
		for i := range 32 {
			reqs = append(reqs, engine.Request{ID: fmt.Sprint(i), Prompt: b.Tok.Encode(prompts[i%len(prompts)], true, false),
				MaxTokens: 12 + i%7, IgnoreEOS: true, Params: sample.Params{Temperature: temp, Seed: uint64(i)}})
		}
		run := func(p engine.Proposer) (map[string][]int, engine.Stats) {
			o := engine.DefaultOptions()
			o.BatchInvariant = true
			o.Scheduler.NumBlocks = 512
			if p != nil {
				o.Speculative = engine.SpecOptions{Proposer: p, NumTokens: 3, DisableByBatchSize: -1}
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
				t.Errorf("temperature %g: %d of %d engine blocks free", temp, st.FreeBlocks, st.NumBlocks)
			}
			return out, st
		}
		d, err := NewDraft(b.Model, DraftOptions{Invariant: true, KVTokens: 4096})
		if err != nil {
			t.Fatal(err)
		}
		got, st := run(d)
		if free, total := d.Blocks(); free != total {
			t.Errorf("temperature %g: %d of %d draft blocks free after every request finished", temp, free, total)
		}
		if st.Spec.DraftTokens == 0 || float64(st.Spec.AcceptedTokens) < 0.95*float64(st.Spec.DraftTokens) {
			t.Errorf("temperature %g: a model drafting for itself: %+v", temp, st.Spec)
		}
		if temp > 0 {
			continue // the draws differ from those without drafts; their distribution is tested in package sample and engine
		}
		want, _ := run(nil)
		for _, r := range reqs {
			if !slices.Equal(got[r.ID], want[r.ID]) {
				t.Errorf("request %s:\n with the draft %v\n without       %v", r.ID, got[r.ID], want[r.ID])
			}
		}
	}
}
