// The head shipped for the default model (recipes/default/medusa-head.gguf) loads, drafts in
// the engine without changing the greedy text (batch invariant), and is a trained head: a
// good share of its drafts is accepted (a random head's almost none are).
package spec

import (
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
	var reqs []engine.Request
	for i, pr := range []string{"Tom and his dog", "Once upon a time", "Lily saw a big"} {
		reqs = append(reqs, engine.Request{ID: pr, Prompt: b.Tok.Encode(pr, true, false), MaxTokens: 48 + i, IgnoreEOS: true})
	}
	plain, _ := runInEngine(t, b.Model, b.Tok, reqs, nil, 0, 0)
	spec, st := runInEngine(t, b.Model, b.Tok, reqs, hp, 4, 0)
	for _, r := range reqs {
		if !slices.Equal(plain[r.ID], spec[r.ID]) {
			t.Errorf("%q: speculative tokens differ\nplain %v\nspec  %v", r.ID, plain[r.ID], spec[r.ID])
		}
	}
	s := st.Spec
	rate := float64(s.AcceptedTokens) / float64(max(1, s.DraftTokens))
	t.Logf("%d drafts, %d draft tokens, %d accepted (%.1f%%), by position %v", s.Drafts, s.DraftTokens, s.AcceptedTokens, 100*rate, s.AcceptedPerPos)
	if s.Drafts == 0 || rate < 0.25 {
		t.Errorf("the shipped head's drafts: %d drafts, acceptance %.1f%% (a trained head gets ~45%%)", s.Drafts, 100*rate)
	}
}
