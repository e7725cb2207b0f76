// Tests of constrained decoding (Request.Constraint) on a real model: every sampled token is
// one the constraint allowed (greedy, seeded temperature 1, top-k/p, penalties), an allow-all
// constraint changes nothing, a constraint that is Done ends its request with "stop" (the last
// token kept), EOS still ends a request where the constraint allows it, a constraint that
// rejects, panics or allows nothing aborts only its own request, preemption by recompute
// neither re-samples nor re-accepts a token, and 64 concurrent constrained requests each get
// what they get alone. Every engine is checked for leaked blocks at the end (newEngine).
package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/sample"
)

// testConstraint allows token t at output position k when allow(k, t); it is Done after
// doneAfter tokens (0 = never). failAt, panicFill, panicAccept (1-based output positions, 0 =
// never) make it misbehave. It checks the engine's side of the contract: one FillMask before
// each Accept, and Accept only of allowed tokens.
type testConstraint struct {
	allow       func(k, t int) bool
	vocab       int
	doneAfter   int
	failAt      int // Accept of this token returns an error
	panicFill   int // FillMask for this token panics
	panicAccept int // Accept of this token panics

	accepted []int
	fills    int
	pending  bool  // a mask was filled and not yet used by an Accept
	misuse   error // the first contract violation seen
}

func (c *testConstraint) FillMask(mask []uint64) {
	k := len(c.accepted)
	c.fills++
	if c.pending && c.misuse == nil {
		c.misuse = fmt.Errorf("FillMask twice for position %d", k)
	}
	c.pending = true
	if c.panicFill == k+1 {
		panic("test FillMask panic")
	}
	for t := range c.vocab {
		if c.allow(k, t) {
			mask[t/64] |= 1 << (t % 64)
		}
	}
}

func (c *testConstraint) Accept(tok int) error {
	k := len(c.accepted)
	if !c.pending && c.misuse == nil {
		c.misuse = fmt.Errorf("Accept(%d) at position %d without a mask", tok, k)
	}
	c.pending = false
	if c.panicAccept == k+1 {
		panic("test Accept panic")
	}
	if c.failAt == k+1 {
		return errors.New("test rejection")
	}
	if !c.allow(k, tok) {
		if c.misuse == nil {
			c.misuse = fmt.Errorf("Accept(%d) at position %d: not allowed", tok, k)
		}
		return fmt.Errorf("token %d not allowed", tok)
	}
	c.accepted = append(c.accepted, tok)
	return nil
}

func (c *testConstraint) Rollback(n int) { c.accepted = c.accepted[:len(c.accepted)-n] }

func (c *testConstraint) Done() bool { return c.doneAfter > 0 && len(c.accepted) >= c.doneAfter }

// sparse allows about a fifth of the ordinary tokens (ids >= 3), a different fifth at each
// position: never BOS, EOS or unknown.
func sparse(k, t int) bool { return t >= 3 && (t*7+k)%5 == 0 }

// constrainedRequests are n requests with mixed sampling parameters under sparse constraints
// (fresh ones: a constraint holds one sequence's state). cs receives them by request id.
func constrainedRequests(n, vocab int, seed uint64, cs map[string]*testConstraint) []Request {
	reqs := mixedRequests(n, vocab, 60, 30, seed)
	for i := range reqs {
		r := &reqs[i]
		switch i % 4 {
		case 1:
			r.Params = sample.Params{Temperature: 1, Seed: uint64(i)}
		case 2:
			r.Params = sample.Params{Temperature: 1, TopK: 20, TopP: 0.9, MinP: 0.02, PresencePenalty: 0.5,
				RepetitionPenalty: 1.2, Seed: uint64(i), Logprobs: true, TopLogprobs: 2}
		}
		c := &testConstraint{allow: sparse, vocab: vocab}
		r.Constraint = c
		cs[r.ID] = c
	}
	return reqs
}

// checkConstrained checks every result against its constraint: only allowed tokens, each
// accepted once, one mask per token, no contract violation.
func checkConstrained(t *testing.T, res map[string]result, cs map[string]*testConstraint) {
	t.Helper()
	for id, c := range cs {
		r := res[id]
		for k, tok := range r.tokens {
			if !c.allow(k, tok) {
				t.Errorf("%s: token %d at position %d not allowed", id, tok, k)
			}
		}
		if c.misuse != nil {
			t.Errorf("%s: %v", id, c.misuse)
		}
		if r.final.Err == nil && (!slices.Equal(c.accepted, r.tokens) || c.fills != len(r.tokens)) {
			t.Errorf("%s: output %v, accepted %v after %d masks", id, r.tokens, c.accepted, c.fills)
		}
	}
}

func TestConstraintMasksRespected(t *testing.T) {
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			b := openBundle(t, tm.path)
			V := b.Model.Config.Vocab
			csAlone, csTogether := map[string]*testConstraint{}, map[string]*testConstraint{}
			e := newEngine(t, b, nil)
			alone := runAlone(t, e, constrainedRequests(32, V, 3, csAlone))
			together := runAll(t, e, constrainedRequests(32, V, 3, csTogether))
			checkConstrained(t, alone, csAlone)
			checkConstrained(t, together, csTogether)
			compareResults(t, alone, together)
			for id, r := range together {
				if r.final.FinishReason != FinishLength || r.final.Err != nil {
					t.Errorf("%s: finished %q (%v), want length", id, r.final.FinishReason, r.final.Err)
				}
			}
		})
	}
}

// TestConstraintAllowAll: a constraint that allows every token gives exactly the output and
// the logprobs of no constraint.
func TestConstraintAllowAll(t *testing.T) {
	b := openBundle(t, testModels[1].path)
	V := b.Model.Config.Vocab
	e := newEngine(t, b, nil)
	reqs := mixedRequests(24, V, 60, 30, 4)
	free := runAll(t, e, reqs)
	for i := range reqs {
		reqs[i].Constraint = &testConstraint{allow: func(int, int) bool { return true }, vocab: V}
	}
	constrained := runAll(t, e, reqs)
	compareResults(t, free, constrained)
	for id, r := range free {
		if fmt.Sprint(r.lps) != fmt.Sprint(constrained[id].lps) {
			t.Errorf("%s: logprobs differ:\n%v\n%v", id, r.lps, constrained[id].lps)
		}
	}
}

// forced allows exactly seq[k] at position k (and EOS past the end when eos >= 0).
func forced(seq []int, eos int) func(k, t int) bool {
	return func(k, t int) bool { return (k < len(seq) && t == seq[k]) || (k >= len(seq) && t == eos) }
}

func TestConstraintDoneAndEOS(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	eos := -1
	for id := range b.Tok.VocabSize() {
		if b.Tok.IsEOG(id) {
			eos = id
			break
		}
	}
	if eos < 0 {
		t.Fatal("the tokenizer has no EOS")
	}
	seq := b.Tok.Encode(" The little dog ran", false, false)
	V := b.Model.Config.Vocab
	prompt := b.Tok.Encode("Once upon a time", true, false)
	reqs := []Request{
		// Done after the forced tokens, well before MaxTokens.
		{ID: "done", Prompt: prompt, MaxTokens: 50, Constraint: &testConstraint{allow: forced(seq, -1), vocab: V, doneAfter: len(seq)}},
		// Done on the very token that reaches MaxTokens: "stop", not "length".
		{ID: "done-at-max", Prompt: prompt, MaxTokens: len(seq), Params: sample.Params{Temperature: 1, Seed: 9},
			Constraint: &testConstraint{allow: forced(seq, -1), vocab: V, doneAfter: len(seq)}},
		// Not Done, but only EOS allowed after the tokens: EOS ends it, kept in the ids, not the text.
		{ID: "eos", Prompt: prompt, MaxTokens: 50, Params: sample.Params{Temperature: 1, Seed: 10},
			Constraint: &testConstraint{allow: forced(seq, eos), vocab: V}},
		// Done from the start: nothing is generated.
		{ID: "empty", Prompt: prompt, MaxTokens: 50, Constraint: doneConstraint{}},
	}
	res := runAll(t, newEngine(t, b, nil), reqs)
	text := b.Tok.Decode(seq)
	for _, c := range []struct {
		id     string
		tokens []int
		text   string
	}{
		{"done", seq, text},
		{"done-at-max", seq, text},
		{"eos", append(slices.Clone(seq), eos), text},
		{"empty", nil, ""},
	} {
		r := res[c.id]
		if !slices.Equal(r.tokens, c.tokens) || r.text != c.text || r.final.FinishReason != FinishStop || r.final.Err != nil {
			t.Errorf("%s: %v (%v), want stop %v %q", c.id, r, r.final.Err, c.tokens, c.text)
		}
		if r.final.OutputTokens != len(c.tokens) {
			t.Errorf("%s: OutputTokens %d, want %d", c.id, r.final.OutputTokens, len(c.tokens))
		}
	}
}

// doneConstraint is complete before any token.
type doneConstraint struct{}

func (doneConstraint) FillMask(mask []uint64) {}
func (doneConstraint) Accept(int) error       { return errors.New("nothing may follow") }
func (doneConstraint) Rollback(int)           {}
func (doneConstraint) Done() bool             { return true }

// TestConstraintFailures: a constraint that rejects the sampled token, panics in FillMask or
// Accept, or allows no token aborts its own request with Err set; the tokens before stay
// delivered, the others in the batch get exactly what they get alone, and no block leaks.
func TestConstraintFailures(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	e := newEngine(t, b, nil)
	ok := mixedRequests(12, V, 40, 20, 6)
	alone := runAlone(t, e, ok)
	bad := []struct {
		id string
		c  *testConstraint
		n  int // tokens delivered before the abort
	}{
		{"reject", &testConstraint{allow: sparse, vocab: V, failAt: 4}, 3},
		{"panic-fill", &testConstraint{allow: sparse, vocab: V, panicFill: 6}, 5},
		{"panic-accept", &testConstraint{allow: sparse, vocab: V, panicAccept: 1}, 0},
		{"nothing", &testConstraint{allow: func(k, t int) bool { return k < 2 && sparse(k, t) }, vocab: V}, 2},
	}
	reqs := slices.Clone(ok)
	for i, c := range bad {
		reqs = append(reqs, Request{ID: c.id, Prompt: ok[i].Prompt, MaxTokens: 20, IgnoreEOS: true,
			Params: sample.Params{Temperature: 1, Seed: uint64(i)}, Constraint: c.c})
	}
	res := runAll(t, e, reqs)
	compareResults(t, alone, res)
	for _, c := range bad {
		r := res[c.id]
		if r.final.FinishReason != FinishAbort || r.final.Err == nil || len(r.tokens) != c.n {
			t.Errorf("%s: %v (err %v), want abort with an error after %d tokens", c.id, r, r.final.Err, c.n)
		} else {
			t.Logf("%s: %v", c.id, r.final.Err)
		}
	}
	if st := e.Stats(); st.Aborted != int64(len(bad)) {
		t.Errorf("%d aborted, want %d", st.Aborted, len(bad))
	}
}

// TestConstraintPreemption: under a KV budget that forces preemption by recompute,
// constrained requests produce what they produce with a large budget, with exactly one mask
// and one Accept per token (recompute re-samples nothing).
func TestConstraintPreemption(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	csBig, csSmall := map[string]*testConstraint{}, map[string]*testConstraint{}
	big := runAll(t, newEngine(t, b, nil), constrainedRequests(48, V, 7, csBig))
	var e *Engine
	var mu sync.Mutex // OnStep runs on the step loop, also after the last Output
	midDecode := 0    // preempted sequences that had output tokens to recompute
	e = newEngine(t, b, func(o *Options) {
		o.Scheduler.MaxModelLenTokens = 128
		o.Scheduler.NumBlocks = 16 // 16 blocks of 16 tokens for 48 requests of up to 90
		o.OnStep = func(StepMetrics) {
			for _, seq := range e.sched.seqs {
				if seq.Status == StatusPreempted && seq.NumOutputTokens() > 0 && seq.NumComputedTokens == 0 {
					mu.Lock()
					midDecode++
					mu.Unlock()
				}
			}
		}
	})
	small := runAll(t, e, constrainedRequests(48, V, 7, csSmall))
	compareResults(t, big, small)
	checkConstrained(t, small, csSmall)
	mu.Lock()
	defer mu.Unlock()
	if p := e.Stats().Preemptions; p == 0 || midDecode == 0 {
		t.Errorf("%d preemptions, %d step-ends with a preempted sequence holding output", p, midDecode)
	} else {
		t.Logf("%d preemptions; %d step-ends with a preempted sequence holding output", p, midDecode)
	}
}

// TestConstraintConcurrent64: 64 constrained requests run together (masks filled beside the
// forward of one batch) and each gets what it gets alone; aborts and client cancels of
// constrained requests mid-decode free their blocks (checked when the engine shuts down).
func TestConstraintConcurrent64(t *testing.T) {
	b := openBundle(t, testModels[1].path)
	V := b.Model.Config.Vocab
	csAlone, cs := map[string]*testConstraint{}, map[string]*testConstraint{}
	alone := runAlone(t, newEngine(t, b, nil), constrainedRequests(64, V, 8, csAlone))
	var mu sync.Mutex
	maxConstrained := 0
	gate := make(chan struct{})
	e := newEngine(t, b, func(o *Options) {
		o.OnStep = func(m StepMetrics) {
			<-gate
			mu.Lock()
			maxConstrained = max(maxConstrained, m.Constrained)
			mu.Unlock()
		}
	})
	reqs := constrainedRequests(64, V, 8, cs)
	chans := addAll(t, e, reqs)
	close(gate)
	together := collectAll(reqs, chans)
	compareResults(t, alone, together)
	checkConstrained(t, together, cs)
	mu.Lock()
	if maxConstrained < 32 {
		t.Errorf("at most %d constrained sequences in a step; the test wants a crowd", maxConstrained)
	}
	mu.Unlock()

	// Aborts and cancels: every other request is cancelled or aborted at the third step.
	steps := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var e2 *Engine
	e2 = newEngine(t, b, func(o *Options) {
		o.OnStep = func(StepMetrics) {
			steps++
			if steps == 3 {
				cancel()
				for i := 0; i < 16; i += 4 {
					_ = e2.Abort(fmt.Sprintf("r%02d", i))
				}
				// The cancels call Abort from their own goroutines: wait, on the loop, until
				// all eight aborts are in the inbox.
				for {
					e2.mu.Lock()
					n := len(e2.inbox)
					e2.mu.Unlock()
					if n == 8 {
						break
					}
					runtime.Gosched()
				}
			}
		}
	})
	reqs = constrainedRequests(16, V, 9, map[string]*testConstraint{})
	chans = make([]<-chan Output, len(reqs))
	for i, r := range reqs {
		r.MaxTokens, r.IgnoreEOS = 40, true
		c := context.Background()
		if i%4 == 2 {
			c = ctx
		}
		ch, err := e2.Add(c, r)
		if err != nil {
			t.Fatal(err)
		}
		chans[i] = ch
	}
	res := collectAll(reqs, chans)
	for i, r := range reqs {
		want := FinishLength
		if i%2 == 0 {
			want = FinishAbort
		}
		if got := res[r.ID].final.FinishReason; got != want {
			t.Errorf("%s: %q, want %q", r.ID, got, want)
		}
	}
}
