// Test of speculative sampling through the engine: at temperature 1, requests whose drafts a
// proposer draws from its own distributions (passed as Probs, so the engine must hand each
// draft's q to the verification) produce second to fourth tokens distributed as without
// speculation (two-sample chi-square, p > 0.01, fixed seeds: deterministic).
package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/sample"
)

// drawProposer drafts each position from a distribution uniform over three tokens (top[pos],
// indexed by output position) and reports it in Probs.
type drawProposer struct {
	prompt int
	top    [][]int
	vocab  int
	rng    *rand.Rand
	probs  [][]float32 // one row per token set, reused: the engine reads them next step
}

func (p *drawProposer) Propose(reqs []ProposeRequest) error {
	for i := range reqs {
		r := &reqs[i]
		r.Draft, r.Probs = r.Draft[:0], nil
		for j := range r.K {
			pos := len(r.Tokens) - p.prompt + j
			if pos >= len(p.top) {
				break
			}
			r.Draft = append(r.Draft, p.top[pos][p.rng.IntN(3)])
			r.Probs = append(r.Probs, p.probs[pos])
		}
	}
	return nil
}

func (p *drawProposer) Forget(SeqID) {}

// chiSquareTwoSample is the p-value of the hypothesis that counts a and b (same total) come
// from one distribution; bins with fewer than 10 expected are pooled. The chi-square tail is
// Wilson and Hilferty's normal approximation.
func chiSquareTwoSample(a, b map[int]int) (float64, int) {
	var stat float64
	df := -1
	pa, pb := 0, 0
	for tok, na := range a {
		nb := b[tok]
		if na+nb < 20 {
			pa, pb = pa+na, pb+nb
			continue
		}
		stat += float64((na-nb)*(na-nb)) / float64(na+nb)
		df++
	}
	for tok, nb := range b {
		if _, ok := a[tok]; !ok {
			pb += nb
		}
	}
	if pa+pb > 0 {
		stat += float64((pa-pb)*(pa-pb)) / float64(pa+pb)
		df++
	}
	if df < 1 {
		return 1, df
	}
	k := float64(df)
	z := (math.Cbrt(stat/k) - (1 - 2/(9*k))) / math.Sqrt(2/(9*k))
	return 0.5 * math.Erfc(z/math.Sqrt2), df
}

func TestSpecSamplingDistribution(t *testing.T) {
	const n = 6000
	b := openBundle(t, testModels[0].path)
	V := b.Model.Config.Vocab
	prompt := []int{1, 365, 471}
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = Request{ID: fmt.Sprint(i), Prompt: prompt, MaxTokens: 4, IgnoreEOS: true,
			Params: sample.Params{Temperature: 1, Seed: uint64(i + 1)}}
	}
	big := func(o *Options) { o.Scheduler.MaxNumSeqs, o.Scheduler.NumBlocks = 256, 1024 }
	plain := runAll(t, newEngine(t, b, big), reqs)
	counts := func(res map[string]result, pos int) map[int]int {
		c := map[int]int{}
		for _, r := range res {
			c[r.tokens[pos]]++
		}
		return c
	}
	p := &drawProposer{prompt: len(prompt), vocab: V, rng: rand.New(rand.NewPCG(8, 8))}
	for pos := range 4 {
		c := counts(plain, pos)
		toks := slices.Collect(func(yield func(int) bool) {
			for tok := range c {
				if !yield(tok) {
					return
				}
			}
		})
		slices.SortFunc(toks, func(x, y int) int { return c[y] - c[x] })
		for len(toks) < 3 {
			toks = append(toks, 3+len(toks))
		}
		q := make([]float32, V)
		for _, tok := range toks[:3] {
			q[tok] = 1.0 / 3
		}
		p.top, p.probs = append(p.top, toks[:3]), append(p.probs, q)
	}
	e := newEngine(t, b, func(o *Options) { big(o); specOpts(p, 2)(o) })
	spec := runAll(t, e, reqs)
	s := e.Stats().Spec
	if s.AcceptedTokens == 0 || s.AcceptedTokens == s.DraftTokens {
		t.Fatalf("spec stats %+v: want some drafts accepted and some rejected", s)
	}
	for pos := 1; pos < 4; pos++ {
		pv, df := chiSquareTwoSample(counts(plain, pos), counts(spec, pos))
		t.Logf("output token %d: p = %.3f (%d degrees of freedom)", pos, pv, df)
		if pv < 0.01 {
			t.Errorf("output token %d: distributions differ, p = %.4f", pos, pv)
		}
	}
	t.Logf("%d drafts, %d draft tokens, %d accepted %v", s.Drafts, s.DraftTokens, s.AcceptedTokens, s.AcceptedPerPos)
}
