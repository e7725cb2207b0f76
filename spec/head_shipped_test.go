// The head shipped for the default model (recipes/default/medusa-head.gguf) loads, drafts in
// the engine without changing the greedy text (batch invariant), and is a trained head: a
// good share of its drafts is accepted (a random head's almost none are).
package spec

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestShippedHead(t *testing.T) {
	b := openBundle(t, defaultModelPath())
	head, err := LoadHead(filepath.Join(fixture.ModuleRoot(), "recipes", "default", "medusa-head.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	hp, err := NewHeadProposer(head, b.Model, b.Model.Pool)
	if err != nil {
		t.Fatal(err)
	}
	prompts := []string{"Tom and his dog", "Once upon a time", "Lily saw a big"}
	run := func(p engine.Proposer) ([][]int, engine.Stats) {
		o := engine.DefaultOptions()
		o.BatchInvariant = true
		if p != nil {
			o.Speculative = engine.SpecOptions{Proposer: p, NumTokens: 4, DisableByBatchSize: -1}
		}
		e, err := engine.New(b.Model, b.Tok, o)
		if err != nil {
			t.Fatal(err)
		}
		var outs [][]int
		for i, pr := range prompts {
			ch, err := e.Add(context.Background(), engine.Request{ID: pr, Prompt: b.Tok.Encode(pr, true, false), MaxTokens: 48 + i, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			var toks []int
			for o := range ch {
				if o.Err != nil {
					t.Fatal(o.Err)
				}
				toks = append(toks, o.TokenIDs...)
			}
			outs = append(outs, toks)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return outs, e.Stats()
	}
	plain, _ := run(nil)
	spec, st := run(hp)
	for i := range prompts {
		if !slices.Equal(plain[i], spec[i]) {
			t.Errorf("%q: speculative tokens differ\nplain %v\nspec  %v", prompts[i], plain[i], spec[i])
		}
	}
	s := st.Spec
	rate := float64(s.AcceptedTokens) / float64(max(1, s.DraftTokens))
	t.Logf("%d drafts, %d draft tokens, %d accepted (%.1f%%), by position %v", s.Drafts, s.DraftTokens, s.AcceptedTokens, 100*rate, s.AcceptedPerPos)
	if s.Drafts == 0 || rate < 0.25 {
		t.Errorf("the shipped head's drafts: %d drafts, acceptance %.1f%% (a trained head gets ~45%%)", s.Drafts, 100*rate)
	}
}
