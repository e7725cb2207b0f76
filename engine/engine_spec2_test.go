// More tests of speculative decoding in the Engine: rejected drafts never reach the prefix
// cache while accepted tokens do; aborts while drafts are set; preemption under a tiny KV
// pool; the batch-size switch; constrained requests get no drafts; option errors; the
// adaptive k rule.
package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// constProposer drafts the same tokens every time.
type constProposer struct {
	oracleProposer
	draft []int
}

func (p *constProposer) Propose(reqs []ProposeRequest) error {
	for i := range reqs {
		reqs[i].Draft = append(reqs[i].Draft[:0], p.draft[:min(len(p.draft), reqs[i].K)]...)
	}
	return p.oracleProposer.Propose(nil)
}

func runOne(t *testing.T, e *Engine, r Request) result {
	t.Helper()
	return runAll(t, e, []Request{r})[r.ID]
}

// TestSpecRejectedNeverCached: every draft rejected; a later request whose prompt holds those
// drafts hits only the blocks of accepted tokens, one holding the accepted tokens hits them
// all; outputs equal plain decoding and every block is free at the end.
func TestSpecRejectedNeverCached(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	wrong := slices.Repeat([]int{V - 1}, 16)
	p := &constProposer{draft: wrong}
	p.seen, p.forgot = map[SeqID]bool{}, map[SeqID]int{}
	e := newEngine(t, b, specOpts(p, 16))
	plain := newEngine(t, b, func(o *Options) { o.Scheduler.PrefixCaching = false })
	prompt := mixedRequests(1, V, 1, 1, 3)[0].Prompt[:1]
	for len(prompt) < 31 {
		prompt = append(prompt, 3+len(prompt)*7%(V-3))
	}
	a := Request{ID: "a", Prompt: prompt, MaxTokens: 20, IgnoreEOS: true}
	ga, wa := runOne(t, e, a), runOne(t, plain, a)
	if !slices.Equal(ga.tokens, wa.tokens) || slices.Contains(wa.tokens, V-1) {
		t.Fatalf("a: %v, plain %v", ga.tokens, wa.tokens)
	}
	if s := e.Stats().Spec; s.Drafts == 0 || s.AcceptedTokens != 0 {
		t.Fatalf("stats %+v: want drafts, none accepted", s)
	}
	// b: the prompt, a's first token (2 full blocks), then the rejected drafts.
	bq := Request{ID: "b", Prompt: append(append(slices.Clone(prompt), ga.tokens[0]), wrong...), MaxTokens: 5, IgnoreEOS: true}
	// c: a's whole accepted sequence and one more token.
	cq := Request{ID: "c", Prompt: append(append(slices.Clone(prompt), ga.tokens...), 5), MaxTokens: 5, IgnoreEOS: true}
	for _, tc := range []struct {
		r    Request
		hits int
	}{{bq, 32}, {cq, 48}} {
		got, want := runOne(t, e, tc.r), runOne(t, plain, tc.r)
		if got.final.CachedTokens != tc.hits {
			t.Errorf("%s: %d prompt tokens from the prefix cache, want %d", tc.r.ID, got.final.CachedTokens, tc.hits)
		}
		if !slices.Equal(got.tokens, want.tokens) {
			t.Errorf("%s: %v, plain %v", tc.r.ID, got.tokens, want.tokens)
		}
	}
	if st := e.Stats(); st.FreeBlocks != st.NumBlocks {
		t.Errorf("%d of %d blocks free", st.FreeBlocks, st.NumBlocks)
	}
}

// TestSpecAbort: requests aborted (by Abort and by a cancelled context) right after their
// drafts were set end with "abort"; the others are unaffected; no block leaks.
func TestSpecAbort(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	reqs := greedyRequests(6, V, 21)
	for i := range reqs {
		reqs[i].MaxTokens, reqs[i].IgnoreEOS = 40, true
	}
	plain := newEngine(t, b, nil)
	want := runAll(t, plain, reqs)
	p := newOracle(references(t, plain, reqs), 0.3, V)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var e *Engine
	p.onCall = func(rs []ProposeRequest) {
		switch p.calls {
		case 3:
			_ = e.Abort(reqs[1].ID)
		case 5:
			cancel() // reqs[2]: its context's watcher aborts it from another goroutine
		}
	}
	e = newEngine(t, b, specOpts(p, 4))
	chans := make([]<-chan Output, len(reqs))
	for i, r := range reqs {
		c := context.Background()
		if i == 2 {
			c = ctx
		}
		ch, err := e.Add(c, r)
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	got := collectAll(reqs, chans)
	for i, r := range reqs {
		g := got[r.ID]
		switch {
		case i == 1 || i == 2:
			if g.final.FinishReason != FinishAbort || len(g.tokens) >= 40 || !slices.Equal(g.tokens, want[r.ID].tokens[:len(g.tokens)]) {
				t.Errorf("%s: %s after %v", r.ID, g.final.FinishReason, g.tokens)
			}
		case !slices.Equal(g.tokens, want[r.ID].tokens):
			t.Errorf("%s: %v, want %v", r.ID, g.tokens, want[r.ID].tokens)
		}
	}
	shutdownAndCheck(t, e)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.forgot) != len(reqs) {
		t.Errorf("forgotten %v", p.forgot)
	}
}

// TestSpecPreemption: a KV pool far too small for 32 speculating requests preempts sequences
// holding drafts; outputs equal plain decoding with a large pool.
func TestSpecPreemption(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	reqs := greedyRequests(32, V, 31)
	plain := newEngine(t, b, nil)
	want := runAll(t, plain, reqs)
	p := newOracle(references(t, plain, reqs), 0.25, V)
	e := newEngine(t, b, func(o *Options) {
		specOpts(p, 6)(o)
		o.Scheduler.MaxModelLenTokens = 128
		o.KVCacheBytes = 12 * 16 * KVBytesPerToken(b.Model.Config.Layers, b.Model.Config.KVHeads, b.Model.Config.HeadDim, 4)
	})
	got := runAll(t, e, reqs)
	compareResults(t, want, got)
	shutdownAndCheck(t, e)
	st := e.Stats()
	if st.Preemptions == 0 || st.Spec.AcceptedTokens == 0 {
		t.Errorf("%d preemptions, spec %+v", st.Preemptions, st.Spec)
	}
	t.Logf("%d preemptions, %d drafts", st.Preemptions, st.Spec.Drafts)
}

// TestSpecDisableByBatchSize: no drafts in a step after one that ended with the threshold's
// number of running sequences; drafts again once fewer run. 0 means the default.
func TestSpecDisableByBatchSize(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	reqs := greedyRequests(12, V, 41)
	p := &constProposer{draft: []int{5, 6, 7}}
	p.seen, p.forgot = map[SeqID]bool{}, map[SeqID]int{}
	type step struct{ running, drafts int }
	var mu sync.Mutex
	var steps []step
	gate := make(chan struct{})
	e := newEngine(t, b, func(o *Options) {
		o.Speculative = SpecOptions{Proposer: p, NumTokens: 3, DisableByBatchSize: 4}
		o.OnStep = func(m StepMetrics) {
			<-gate
			mu.Lock()
			steps = append(steps, step{m.Running, m.DraftTokens})
			mu.Unlock()
		}
	})
	chans := addAll(t, e, reqs)
	close(gate)
	collectAll(reqs, chans)
	mu.Lock()
	defer mu.Unlock()
	drafted := 0
	for i := 1; i < len(steps); i++ {
		if steps[i-1].running >= 4 && steps[i].drafts > 0 {
			t.Fatalf("step %d: %d drafts after a step ending with %d running", i, steps[i].drafts, steps[i-1].running)
		}
		drafted += steps[i].drafts
	}
	if drafted == 0 {
		t.Error("no drafts at all")
	}
	for _, tc := range []struct{ set, want int }{{0, DefaultDisableByBatchSize}, {-1, 0}, {64, 64}} {
		sp, err := newSpecEngine(SpecOptions{Proposer: p, NumTokens: 2, DisableByBatchSize: tc.set}, DefaultConfig())
		if err != nil || sp.disableAt != tc.want {
			t.Errorf("DisableByBatchSize %d: %d, %v", tc.set, sp.disableAt, err)
		}
	}
}

// TestSpecConstrainedNoDrafts: a constrained request is never proposed for.
func TestSpecConstrainedNoDrafts(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	p := &oracleProposer{ngramOn: true, seen: map[SeqID]bool{}, forgot: map[SeqID]int{}}
	c := Request{ID: "c", Prompt: []int{1, 9, 9, 9}, MaxTokens: 20, IgnoreEOS: true, Constraint: newFixed(map[int]int{2: 7}, V, 0)}
	free := Request{ID: "f", Prompt: []int{1, 8, 8, 8}, MaxTokens: 20, IgnoreEOS: true}
	p.onCall = func(rs []ProposeRequest) {
		for _, r := range rs {
			if slices.Equal(r.Tokens[:4], c.Prompt) {
				t.Errorf("proposed for the constrained request")
			}
		}
	}
	e := newEngine(t, b, specOpts(p, 3))
	res := runAll(t, e, []Request{c, free})
	if len(res["c"].tokens) != 20 || res["c"].tokens[2] != 7 || p.calls == 0 {
		t.Errorf("constrained %v, %d Propose calls", res["c"].tokens, p.calls)
	}
}

// TestSpecBadDrafts: drafts with tokens outside the vocabulary are cut there (the forward
// would reject the whole step); the output is plain decoding's.
func TestSpecBadDrafts(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	r := Request{ID: "r", Prompt: []int{1, 40, 41}, MaxTokens: 12, IgnoreEOS: true}
	want := runOne(t, newEngine(t, b, nil), r)
	p := &constProposer{draft: []int{want.tokens[1], V + 3, 5}}
	p.seen, p.forgot = map[SeqID]bool{}, map[SeqID]int{}
	e := newEngine(t, b, specOpts(p, 3))
	if got := runOne(t, e, r); !slices.Equal(got.tokens, want.tokens) {
		t.Errorf("%v, want %v", got.tokens, want.tokens)
	}
	if s := e.Stats().Spec; s.DraftTokens != s.Drafts || s.AcceptedPerPos[0] == 0 {
		t.Errorf("stats %+v: want one-token drafts, the first accepted once", s)
	}
}

// failingProposer drafts the wrong token, and fails (error, panic) on some calls.
type failingProposer struct{ calls int }

func (p *failingProposer) Propose(reqs []ProposeRequest) error {
	p.calls++
	for i := range reqs {
		reqs[i].Draft = append(reqs[i].Draft[:0], 7)
	}
	switch p.calls % 3 {
	case 1:
		return fmt.Errorf("no drafts today")
	case 2:
		panic("proposer bug")
	}
	return nil
}

func (p *failingProposer) Forget(SeqID) {}

// TestSpecProposerFails: a Proposer's error or panic costs that step's drafts, nothing else.
func TestSpecProposerFails(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	reqs := greedyRequests(4, b.Model.Config.Vocab, 51)
	want := runAll(t, newEngine(t, b, nil), reqs)
	p := &failingProposer{}
	e := newEngine(t, b, specOpts(p, 2))
	compareResults(t, want, runAll(t, e, reqs))
	if s := e.Stats().Spec; p.calls < 3 || s.Drafts == 0 || s.Drafts >= int64(p.calls)*4 {
		t.Errorf("%d calls, stats %+v", p.calls, s)
	}
}

func TestSpecOptionsErrors(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	p := &oracleProposer{}
	for _, tc := range []struct {
		o    SpecOptions
		want string
	}{
		{SpecOptions{NumTokens: 3}, "without a Proposer"},
		{SpecOptions{Proposer: p}, "NumTokens 0 out of range"},
		{SpecOptions{Proposer: p, NumTokens: MaxSpecTokens + 1}, "out of range"},
		{SpecOptions{Proposer: p, NumTokens: 8}, "below the step budget"},
	} {
		o := DefaultOptions()
		o.Scheduler.MaxNumBatchedTokens = 8
		o.Scheduler.NumBlocks = 64
		o.Speculative = tc.o
		if _, err := New(b.Model, b.Tok, o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestSpecAdaptiveK: k follows the sequence's acceptance.
func TestSpecAdaptiveK(t *testing.T) {
	var s specSeq
	if k := s.k(5); k != 5 {
		t.Errorf("new sequence: k %d", k)
	}
	for range 20 {
		s.observe(0, s.k(5))
	}
	if k := s.k(5); k != 1 {
		t.Errorf("all rejected: k %d", k)
	}
	for range 20 {
		k := s.k(5)
		s.observe(k, k)
	}
	if k := s.k(5); k != 5 {
		t.Errorf("all accepted: k %d", k)
	}
	// All rejected: p falls below 0.25 and the pauses double up to 16 steps.
	var r specSeq
	var pauses []int
	for range 12 {
		r.observe(0, 1)
		n := 0
		for r.paused() {
			n++
		}
		pauses = append(pauses, n)
	}
	if want := []int{0, 0, 0, 0, 1, 2, 4, 8, 16, 16, 16, 16}; !slices.Equal(pauses, want) {
		t.Errorf("pauses %v, want %v", pauses, want)
	}
	r.observe(1, 1) // accepted: p = 1.x / (1.x + R) rises; pauses end once p >= 0.25
	for range 3 {
		r.observe(1, 1)
	}
	if r.paused() || r.backoff != 0 {
		t.Errorf("still backing off after accepted drafts: %+v", r)
	}
	var h specSeq
	for range 40 {
		h.observe(1, 2) // p = 1/2: p^3 >= 0.1 > p^4
	}
	if k := h.k(8); k != 3 {
		t.Errorf("half accepted: k %d", k)
	}
}
