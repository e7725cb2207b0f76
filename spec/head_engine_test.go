// The learned draft head in the engine: a random-weight head (token input, so it drafts a
// chain) on stories260K among 32 concurrent requests (batch invariant) gives the same greedy
// tokens as without speculation, its drafts are verified, and every block is free afterwards.
package spec

import (
	"fmt"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/sample"
)

func TestHeadInEngine(t *testing.T) {
	m := headTestModel(t)
	head := headRandom(t, m, 3, true)
	var reqs []engine.Request
	for i := range 32 {
		prompt := []int{1}
		for j := range 3 + i%5 {
			prompt = append(prompt, 10+(i*7+j*13)%400)
		}
		reqs = append(reqs, engine.Request{ID: fmt.Sprint(i), Prompt: prompt, MaxTokens: 10 + i%9,
			IgnoreEOS: true, Params: sample.Params{Seed: uint64(i)}})
	}
	run := func(p engine.Proposer) (map[string][]int, engine.Stats) {
		return runInEngine(t, m, nil, reqs, p, 3, 256)
	}
	hp, err := NewHeadProposer(head, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, st := run(hp)
	if st.Spec.Drafts == 0 || st.Spec.DraftTokens == 0 {
		t.Fatalf("the head drafted nothing: %+v", st.Spec)
	}
	want, _ := run(nil)
	for _, r := range reqs {
		if !slices.Equal(got[r.ID], want[r.ID]) {
			t.Errorf("request %s:\n with the head %v\n without      %v", r.ID, got[r.ID], want[r.ID])
		}
	}
	t.Logf("head drafts: %+v", st.Spec)
}
