// The draft proposer in the engine: the default model drafting for itself among 32
// concurrent requests (batch invariant) gives the same greedy tokens as without speculation,
// every draft is accepted (greedy, and at temperature 1 where q = p), and after the requests
// finish every block of the engine's and of the draft's KV pool is free.
package spec

import (
	"fmt"
	"slices"
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
			return runInEngine(t, b.Model, b.Tok, reqs, p, 3, 512)
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
