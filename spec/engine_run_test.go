package spec

import (
	"context"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// runInEngine serves reqs concurrently on a batch-invariant engine over m (with proposer p
// drafting k tokens, or no speculation when p is nil) and returns each request's tokens and
// the engine's stats; after shutdown every engine KV block must be free.
func runInEngine(t *testing.T, m *model.Model, tok *tokenizer.Tokenizer, reqs []engine.Request, p engine.Proposer, k, numBlocks int) (map[string][]int, engine.Stats) {
	t.Helper()
	o := engine.DefaultOptions()
	o.BatchInvariant = true
	if numBlocks > 0 {
		o.Scheduler.NumBlocks = numBlocks
	}
	if p != nil {
		o.Speculative = engine.SpecOptions{Proposer: p, NumTokens: k, DisableByBatchSize: -1}
	}
	e, err := engine.New(m, tok, o)
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
				if o.Err != nil {
					t.Errorf("request %s: %v", r.ID, o.Err)
				}
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
		t.Errorf("%d of %d engine blocks free after every request finished", st.FreeBlocks, st.NumBlocks)
	}
	return out, st
}
