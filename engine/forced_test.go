// Tests of jump forward (Forcer): a constraint that forces tokens gets them appended without
// sampling, and at greedy the output is identical to the run where the same tokens are sampled
// one step each (same ids, text, finish reason, usage; forced logprobs are 0), in fewer steps;
// MaxTokens, the model length, stop strings and a constraint Done after the forced tokens cut
// or end the output exactly where the unforced run does; preemption by recompute of sequences
// holding uncomputed forced tokens changes nothing and leaks no block (newEngine checks).
package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/sample"
)

// fixedConstraint allows only fixed[k] at output positions k it names, and sparse tokens
// elsewhere. It samples the fixed tokens one step each (no Forced).
type fixedConstraint struct {
	testConstraint
	fixed map[int]int
}

func newFixed(fixed map[int]int, vocab, doneAfter int) *fixedConstraint {
	c := &fixedConstraint{fixed: fixed}
	c.testConstraint = testConstraint{vocab: vocab, doneAfter: doneAfter, allow: func(k, t int) bool {
		if tok, ok := fixed[k]; ok {
			return t == tok
		}
		return sparse(k, t)
	}}
	return c
}

// forcingConstraint is a fixedConstraint that forces its fixed tokens (jump forward).
type forcingConstraint struct {
	*fixedConstraint
	calls int
}

func (c *forcingConstraint) Forced() []int {
	c.calls++
	var out []int
	for !c.Done() {
		tok, ok := c.fixed[len(c.accepted)]
		if !ok {
			break
		}
		c.accepted = append(c.accepted, tok)
		out = append(out, tok)
	}
	return out
}

// forcedRequests are greedy requests whose constraints fix spans of tokens taken from text
// (force: as a Forcer). Each request varies MaxTokens, stop strings, Done and logprobs.
func forcedRequests(t *testing.T, tokIDs []int, vocab int, force bool) []Request {
	t.Helper()
	span := func(at int, ids []int, m map[int]int) {
		for i, id := range ids {
			m[at+i] = id
		}
	}
	var reqs []Request
	for i := range 16 {
		fixed := map[int]int{}
		span(1+i%3, tokIDs[:6+i%5], fixed)
		span(14+i%4, tokIDs[3:12], fixed)
		span(30, tokIDs[:4], fixed)
		r := Request{ID: fmt.Sprintf("f%02d", i), Prompt: []int{1, 3 + i, 40 + 2*i, 7}, MaxTokens: 40, IgnoreEOS: true}
		doneAfter := 0
		switch i % 6 {
		case 1:
			r.MaxTokens = 5 + i%3 // ends inside the first span
		case 2:
			doneAfter = 14 + i%4 + 9 // Done right after the second span
		case 3:
			r.Params = sample.Params{RepetitionPenalty: 1.3, Logprobs: true} // forced ids count as seen
		case 4:
			r.MaxTokens = 14 + i%4 + 3 // ends inside the second span
		case 5:
			doneAfter = 14 + i%4 + 9 // Done on the forced token that reaches MaxTokens: stop
			r.MaxTokens = doneAfter
		}
		c := newFixed(fixed, vocab, doneAfter)
		r.Constraint = c
		if force {
			r.Constraint = &forcingConstraint{fixedConstraint: c}
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func TestForcedMatchesSampled(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	ids := b.Tok.Encode(" The little dog ran to the park and played with a ball", false, false)
	if len(ids) < 12 {
		t.Fatalf("%d ids", len(ids))
	}
	plain, forcing := newEngine(t, b, nil), newEngine(t, b, nil)
	want := runAlone(t, plain, forcedRequests(t, ids, V, false))
	reqs := forcedRequests(t, ids, V, true)
	got := runAlone(t, forcing, reqs)
	compareResults(t, want, got)
	for _, r := range reqs {
		w, g := want[r.ID], got[r.ID]
		if w.final.OutputTokens != g.final.OutputTokens || g.final.OutputTokens != len(g.tokens) {
			t.Errorf("%s: OutputTokens %d, want %d (%d tokens)", r.ID, g.final.OutputTokens, w.final.OutputTokens, len(g.tokens))
		}
		if r.Params.Logprobs {
			if len(g.lps) != len(g.tokens) {
				t.Errorf("%s: %d logprobs for %d tokens", r.ID, len(g.lps), len(g.tokens))
			}
			for k, lp := range g.lps {
				if lp.ID != g.tokens[k] {
					t.Errorf("%s: logprob %d is of token %d, not %d", r.ID, k, lp.ID, g.tokens[k])
				}
			}
		}
		c := r.Constraint.(*forcingConstraint)
		if c.misuse != nil || c.calls == 0 {
			t.Errorf("%s: %v, %d Forced calls", r.ID, c.misuse, c.calls)
		}
		if !slices.Equal(c.accepted[:min(len(c.accepted), len(g.tokens))], g.tokens) {
			t.Errorf("%s: constraint accepted %v, output %v", r.ID, c.accepted, g.tokens)
		}
	}
	ws, gs := plain.Stats(), forcing.Stats()
	if gs.Steps >= ws.Steps || gs.GenerationTokens != ws.GenerationTokens {
		t.Errorf("steps %d forced vs %d sampled; generated %d vs %d", gs.Steps, ws.Steps, gs.GenerationTokens, ws.GenerationTokens)
	}
	t.Logf("steps: %d with forcing, %d without (%d tokens generated)", gs.Steps, ws.Steps, gs.GenerationTokens)
}

// TestForcedStopString: a stop string that ends inside a forced span cuts the output where the
// sampled run cuts it.
func TestForcedStopString(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	ids := b.Tok.Encode(" The little dog ran to the park and played with a ball", false, false)
	text := b.Tok.Decode(ids)
	stop := strings.Fields(text)[3] // "ran"
	run := func(force bool) (result, int64) {
		e := newEngine(t, b, nil)
		rs := forcedRequests(t, ids, V, force)[:1]
		rs[0].Stop = []string{stop}
		return runAll(t, e, rs)[rs[0].ID], e.Stats().Steps
	}
	w, ws := run(false)
	g, gs := run(true)
	if fmt.Sprint(w) != fmt.Sprint(g) || w.final.FinishReason != FinishStop || strings.Contains(g.text, stop) {
		t.Errorf("stop %q: forced %v, sampled %v", stop, g, w)
	}
	if gs >= ws {
		t.Errorf("%d steps forced, %d sampled", gs, ws)
	}
}

// TestForcedPreemption: under a KV budget that preempts, forcing requests (whose forced
// tokens wait uncomputed) get what they get with a large budget, and the model length cuts a
// forced span as it cuts sampled tokens.
func TestForcedPreemption(t *testing.T) {
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	ids := b.Tok.Encode(" The little dog ran to the park and played with a ball", false, false)
	many := func(force bool) []Request {
		var reqs []Request
		for round := range 3 {
			for _, r := range forcedRequests(t, ids, V, force) {
				r.ID = fmt.Sprintf("%s-%d", r.ID, round)
				r.Prompt = append(slices.Clone(r.Prompt), slices.Repeat([]int{5 + round}, 20+round*30)...)
				reqs = append(reqs, r)
			}
		}
		return reqs
	}
	big := runAll(t, newEngine(t, b, func(o *Options) { o.Scheduler.MaxModelLenTokens = 100 }), many(false))
	e := newEngine(t, b, func(o *Options) {
		o.Scheduler.MaxModelLenTokens = 100
		o.Scheduler.NumBlocks = 14
	})
	small := runAll(t, e, many(true))
	compareResults(t, big, small)
	if p := e.Stats().Preemptions; p == 0 {
		t.Error("no preemptions under the small budget")
	} else {
		t.Logf("%d preemptions", p)
	}
	lengthCut := 0
	for id, r := range small {
		if strings.HasSuffix(id, "-2") && r.final.FinishReason == FinishLength && len(r.tokens) < 40 {
			lengthCut++
		}
	}
	if lengthCut == 0 {
		t.Error("no request cut by the model length")
	}
}
