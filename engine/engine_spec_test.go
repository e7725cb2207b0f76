// Tests of speculative decoding in the Engine on real models: with batch invariance, greedy
// output with speculation equals greedy output without it, token for token (logprobs too),
// alone and among 32 concurrent requests, for an oracle proposer with corrupted drafts and a
// simple n-gram proposer; stop ids, stop strings and MaxTokens inside a draft; all-rejected
// drafts leave every block free and never reach the prefix cache; aborts mid-speculation,
// preemption of sequences holding drafts, the batch-size switch, constrained requests, and
// the statistics.
package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmcloud/llmcloud/sample"
)

// oracleProposer drafts the continuation a reference run produced, each token replaced by a
// wrong one with probability bad. It records its calls and Forgets.
type oracleProposer struct {
	mu      sync.Mutex
	refs    [][]int // prompt + output of reference runs
	bad     float64
	vocab   int
	rng     *rand.Rand
	calls   int
	seen    map[SeqID]bool
	forgot  map[SeqID]int
	onCall  func(reqs []ProposeRequest) // runs inside Propose, on the step loop
	ngramOn bool                        // draft from the sequence's own history instead
}

func newOracle(refs [][]int, bad float64, vocab int) *oracleProposer {
	return &oracleProposer{refs: refs, bad: bad, vocab: vocab, rng: rand.New(rand.NewPCG(4, 4)),
		seen: map[SeqID]bool{}, forgot: map[SeqID]int{}}
}

func (p *oracleProposer) Propose(reqs []ProposeRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.onCall != nil {
		p.onCall(reqs)
	}
	for i := range reqs {
		r := &reqs[i]
		p.seen[r.ID] = true
		if r.K < 1 || r.Draft == nil && cap(r.Draft) != 0 {
			panic("bad request")
		}
		if p.ngramOn {
			r.Draft = ngramDraft(r.Draft[:0], r.Tokens, r.K)
			continue
		}
		for _, ref := range p.refs {
			if len(ref) > len(r.Tokens) && slices.Equal(ref[:len(r.Tokens)], r.Tokens) {
				r.Draft = append(r.Draft[:0], ref[len(r.Tokens):min(len(ref), len(r.Tokens)+r.K)]...)
				break
			}
		}
		for j, tok := range r.Draft {
			if p.rng.Float64() < p.bad {
				r.Draft[j] = (tok + 1 + p.rng.IntN(p.vocab-1)) % p.vocab
			}
		}
	}
	return nil
}

func (p *oracleProposer) Forget(id SeqID) {
	p.mu.Lock()
	p.forgot[id]++
	p.mu.Unlock()
}

// ngramDraft proposes the k tokens that followed the latest earlier occurrence of the last
// two tokens.
func ngramDraft(dst, toks []int, k int) []int {
	n := len(toks)
	if n < 3 {
		return dst
	}
	for i := n - 3; i >= 1; i-- {
		if toks[i] == toks[n-1] && toks[i-1] == toks[n-2] {
			return append(dst, toks[i+1:min(n, i+1+k)]...)
		}
	}
	return dst
}

// greedyRequests are mixedRequests made greedy (logprobs kept on every fifth).
func greedyRequests(n, vocab int, seed uint64) []Request {
	reqs := mixedRequests(n, vocab, 60, 40, seed)
	for i := range reqs {
		lp := reqs[i].Params.Logprobs
		reqs[i].Params = sample.Params{Logprobs: lp}
		if lp {
			reqs[i].Params.TopLogprobs = 2
		}
	}
	return reqs
}

// references runs reqs without speculation and returns prompt+output of each.
func references(t *testing.T, e *Engine, reqs []Request) [][]int {
	t.Helper()
	res := runAll(t, e, reqs)
	var refs [][]int
	for _, r := range reqs {
		refs = append(refs, append(slices.Clone(r.Prompt), res[r.ID].tokens...))
	}
	return refs
}

func specOpts(p Proposer, k int) func(*Options) {
	return func(o *Options) {
		o.Speculative = SpecOptions{Proposer: p, NumTokens: k, DisableByBatchSize: -1}
	}
}

// checkSpecStats checks Stats.Spec against itself and the steps' draft counts.
func checkSpecStats(t *testing.T, s SpecStats, k int, stepDrafts int64) {
	t.Helper()
	var sum int64
	for i, n := range s.AcceptedPerPos {
		sum += n
		if i > 0 && n > s.AcceptedPerPos[i-1] {
			t.Errorf("accepted per position not decreasing: %v", s.AcceptedPerPos)
		}
	}
	if len(s.AcceptedPerPos) != k || sum != s.AcceptedTokens || s.AcceptedTokens > s.DraftTokens ||
		s.DraftTokens < s.Drafts || s.DraftTokens > int64(k)*s.Drafts || s.DraftTokens != stepDrafts || s.Drafts == 0 {
		t.Errorf("spec stats %+v (steps' draft tokens %d)", s, stepDrafts)
	}
}

// TestSpecGreedyMatches: speculative greedy decoding gives the tokens, text, finish reasons
// and logprobs of plain decoding, alone and among 32 concurrent requests; stop ids and stop
// strings taken from the middle of the reference outputs end requests inside drafts.
func TestSpecGreedyMatches(t *testing.T) {
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			b := openBundle(t, tm.path)
			V := b.Model.Config.Vocab
			reqs := greedyRequests(32, V, 11)
			plain := newEngine(t, b, nil)
			refs := references(t, plain, reqs)
			for i := range reqs { // stops inside the outputs (the proposer drafts past them)
				out := refs[i][len(reqs[i].Prompt):]
				switch {
				case i%4 == 1 && len(out) > 6:
					reqs[i].StopTokenIDs = []int{out[len(out)/2]}
				case i%4 == 3 && len(out) > 6:
					if s := b.Tok.Decode(out[len(out)/2 : len(out)/2+2]); strings.TrimSpace(s) != "" {
						reqs[i].Stop = []string{s}
					}
				}
			}
			want := runAll(t, plain, reqs)
			for _, pc := range []struct {
				name string
				p    *oracleProposer
			}{{"oracle", newOracle(refs, 0.25, V)}, {"ngram", &oracleProposer{ngramOn: true, seen: map[SeqID]bool{}, forgot: map[SeqID]int{}}}} {
				t.Run(pc.name, func(t *testing.T) {
					var mu sync.Mutex
					var stepDrafts int64
					maxDraftSeqs := 0
					gate := make(chan struct{})
					e := newEngine(t, b, func(o *Options) {
						specOpts(pc.p, 4)(o)
						o.OnStep = func(m StepMetrics) {
							mu.Lock()
							g := gate
							mu.Unlock()
							<-g
							mu.Lock()
							stepDrafts += int64(m.DraftTokens)
							if m.DraftTokens > 0 {
								maxDraftSeqs = max(maxDraftSeqs, m.DecodeSeqs)
							}
							mu.Unlock()
						}
					})
					close(gate)
					alone := runAlone(t, e, reqs[:4])
					compareResults(t, alone, want)
					mu.Lock()
					gate = make(chan struct{}) // the first step waits until every request is in
					g := gate
					mu.Unlock()
					chans := addAll(t, e, reqs)
					close(g)
					got := collectAll(reqs, chans)
					compareResults(t, want, got)
					for _, r := range reqs {
						if slices.Equal(got[r.ID].tokens, want[r.ID].tokens) && fmt.Sprint(got[r.ID].lps) != fmt.Sprint(want[r.ID].lps) {
							t.Errorf("%s: logprobs differ\n%v\n%v", r.ID, got[r.ID].lps, want[r.ID].lps)
						}
					}
					shutdownAndCheck(t, e)
					s := e.Stats().Spec
					mu.Lock()
					checkSpecStats(t, s, 4, stepDrafts)
					if maxDraftSeqs < 16 {
						t.Errorf("at most %d sequences speculated together", maxDraftSeqs)
					}
					mu.Unlock()
					pc.p.mu.Lock()
					for id := range pc.p.seen {
						if pc.p.forgot[id] == 0 {
							t.Errorf("sequence %d never forgotten", id)
						}
					}
					pc.p.mu.Unlock()
					t.Logf("%d drafts, %d draft tokens, %d accepted, per position %v", s.Drafts, s.DraftTokens, s.AcceptedTokens, s.AcceptedPerPos)
				})
			}
		})
	}
}
