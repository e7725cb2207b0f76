// Tests of the draft-model proposer with the built-in default model drafting for itself: its
// drafts must be exactly the model's greedy continuation, also after the caller's tokens
// diverge from earlier drafts (rollback), and its KV blocks must all be free again after
// every sequence is forgotten.
package spec

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
)

func defaultModelPath() string {
	return filepath.Join(fixture.ModuleRoot(), "defaultmodel", "default.gguf")
}

func openBundle(t testing.TB, path string) *loader.Bundle {
	t.Helper()
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// greedyRef is m's greedy continuation of n tokens after toks, computed from scratch with
// batch-invariant forwards (a prefill chunk then one-token decodes).
func greedyRef(t *testing.T, m *model.Model, toks []int, n int) []int {
	t.Helper()
	const bs = 16
	kv, err := m.NewPagedKV((len(toks)+n+bs-1)/bs, bs)
	if err != nil {
		t.Fatal(err)
	}
	table := make([]int32, kv.NumBlocks)
	for i := range table {
		table[i] = int32(i)
	}
	b := model.Batch{Invariant: true}
	var out []int
	feed, pos := toks, 0
	for len(out) < n {
		logits, err := m.ForwardBatch(&b, kv, []model.BatchSeq{{Tokens: feed, StartPos: pos, BlockTable: table, NeedsLogits: true}})
		if err != nil {
			t.Fatal(err)
		}
		best := 0
		for i, x := range logits {
			if x > logits[best] {
				best = i
			}
		}
		out = append(out, best)
		pos += len(feed)
		feed = []int{best}
	}
	return out
}

func newTestDraft(t *testing.T, opts DraftOptions) (*Draft, *loader.Bundle) {
	t.Helper()
	b := openBundle(t, defaultModelPath())
	opts.Invariant = true
	d, err := NewDraft(b.Model, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

// TestDraftSelfGreedy: the default model drafting for itself proposes exactly its own greedy
// continuation, for three sequences drafted together, step after step, when every draft and
// one more token are accepted.
func TestDraftSelfGreedy(t *testing.T) {
	d, b := newTestDraft(t, DraftOptions{})
	prompts := []string{"Once upon a time", "The little dog ran to the park and", "Lily"}
	const K, steps = 4, 4
	toks := make([][]int, len(prompts))
	want := make([][]int, len(prompts))
	for i, p := range prompts {
		toks[i] = b.Tok.Encode(p, true, false)
		want[i] = slices.Concat(toks[i], greedyRef(t, b.Model, toks[i], steps*(K+1)))
	}
	greedy := &sample.Params{}
	for step := range steps {
		reqs := make([]engine.ProposeRequest, len(prompts))
		for i := range reqs {
			reqs[i] = engine.ProposeRequest{ID: engine.SeqID(i), Tokens: toks[i], K: K - i%2, Params: greedy}
		}
		if err := d.Propose(reqs); err != nil {
			t.Fatal(err)
		}
		for i, r := range reqs {
			n := len(toks[i])
			if exp := want[i][n : n+r.K]; !slices.Equal(r.Draft, exp) || r.Probs != nil {
				t.Fatalf("step %d seq %d: draft %v (probs %v), want the greedy %v", step, i, r.Draft, r.Probs != nil, exp)
			}
			toks[i] = want[i][:n+r.K+1] // all accepted, plus the target's bonus token
		}
	}
}

// TestDraftRollback: after the caller's tokens diverge from the drafts (a rejection: the
// target's token replaces a draft), the next drafts are the greedy continuation of the
// caller's tokens, not of the drafts the cache held.
func TestDraftRollback(t *testing.T) {
	d, b := newTestDraft(t, DraftOptions{})
	toks := b.Tok.Encode("Tom had a red ball", true, false)
	const K = 5
	for round, accepted := range []int{1, 0, 3, 2, 0} {
		reqs := []engine.ProposeRequest{{ID: 7, Tokens: toks, K: K, Params: &sample.Params{}}}
		if err := d.Propose(reqs); err != nil {
			t.Fatal(err)
		}
		if exp := greedyRef(t, b.Model, toks, K); !slices.Equal(reqs[0].Draft, exp) {
			t.Fatalf("round %d: draft %v after %v, want %v", round, reqs[0].Draft, toks, exp)
		}
		// accept some drafts, then a token other than the next draft (as a rejection gives)
		other := (reqs[0].Draft[accepted] + 1 + round) % b.Model.Config.Vocab
		toks = append(slices.Clone(toks), reqs[0].Draft[:accepted]...)
		toks = append(toks, other)
	}
	// a caller whose tokens change in the middle, then one that goes back to a short prefix
	mid := slices.Clone(toks)
	slices.Reverse(mid[1 : len(mid)-1])
	if slices.Equal(greedyRef(t, b.Model, mid, K), greedyRef(t, b.Model, toks, K)) {
		t.Fatal("the test needs a change in the middle that changes the continuation")
	}
	for _, tt := range [][]int{mid, mid[:3]} {
		reqs := []engine.ProposeRequest{{ID: 7, Tokens: tt, K: K}}
		if err := d.Propose(reqs); err != nil {
			t.Fatal(err)
		}
		if exp := greedyRef(t, b.Model, tt, K); !slices.Equal(reqs[0].Draft, exp) {
			t.Fatalf("after %v: draft %v, want %v", tt, reqs[0].Draft, exp)
		}
	}
}

// TestDraftKVFreed: every block is free again after Forget of every sequence; a sequence that
// does not fit the pool, or the draft's context, gets no draft and no error.
func TestDraftKVFreed(t *testing.T) {
	d, b := newTestDraft(t, DraftOptions{KVTokens: 64, BlockSize: 8, MaxBatchTokens: 5})
	free0, total := d.Blocks()
	if free0 != total || total != 8 {
		t.Fatalf("fresh pool: %d of %d blocks free, want 8 of 8", free0, total)
	}
	short := b.Tok.Encode("Once upon a time", true, false)
	long := make([]int, 60)
	for i := range long {
		long[i] = 10 + i
	}
	huge := make([]int, b.Model.Config.CtxLen+1)
	reqs := []engine.ProposeRequest{
		{ID: 1, Tokens: short, K: 3},
		{ID: 2, Tokens: short[:3], K: 2},
		{ID: 3, Tokens: long, K: 4}, // 63 positions = 8 blocks: more than are left
		{ID: 4, Tokens: huge, K: 2}, // longer than the draft's context
	}
	if err := d.Propose(reqs); err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{3, 2, 0, 0} {
		if len(reqs[i].Draft) != n {
			t.Errorf("request %d: %d draft tokens, want %d", i, len(reqs[i].Draft), n)
		}
	}
	if exp := greedyRef(t, b.Model, short, 3); !slices.Equal(reqs[0].Draft, exp) {
		t.Errorf("catch-up in chunks of 5 rows: draft %v, want %v", reqs[0].Draft, exp)
	}
	if free, _ := d.Blocks(); free == total {
		t.Fatal("no blocks in use after drafting")
	}
	for id := range engine.SeqID(5) {
		d.Forget(id)
	}
	d.Forget(1) // twice: no effect
	if free, _ := d.Blocks(); free != total {
		t.Fatalf("after Forget of every sequence %d of %d blocks are free", free, total)
	}
	// now the long one fits
	reqs = reqs[2:3]
	if err := d.Propose(reqs); err != nil || len(reqs[0].Draft) != 4 {
		t.Fatalf("long sequence alone: draft %v, error %v", reqs[0].Draft, err)
	}
	d.Forget(3)
	if free, _ := d.Blocks(); free != total {
		t.Fatalf("after Forget %d of %d blocks are free", free, total)
	}
}

// BenchmarkDraftPropose: one sequence in decode drafting K=4 tokens per call after one
// accepted token (the steady state of single-stream speculation), its context growing from
// about 30 to 200 tokens, then cut back (the draft's cache keeps the common prefix).
func BenchmarkDraftPropose(b *testing.B) {
	bd, err := loader.Open(defaultModelPath(), loader.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer bd.Close()
	d, err := NewDraft(bd.Model, DraftOptions{KVTokens: 1024})
	if err != nil {
		b.Fatal(err)
	}
	toks := bd.Tok.Encode("Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog.", true, false)
	n0 := len(toks)
	reqs := []engine.ProposeRequest{{ID: 1, K: 4}}
	for b.Loop() {
		if len(toks) > 200 {
			toks = toks[:n0]
		}
		reqs[0].Tokens = toks
		if err := d.Propose(reqs); err != nil {
			b.Fatal(err)
		}
		toks = append(toks, reqs[0].Draft[0])
	}
}
