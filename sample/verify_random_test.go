// Tests of rejection sampling in Verify: chi-square tests (fixed seeds, so deterministic) that
// the verified tokens are distributed as the target's tokens drawn one by one, and the support
// on hard rows; a benchmark.
package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const specTrials = 20000

// randRow returns n Gaussian logits of standard deviation sd.
func randRow(r *rand.Rand, n int, sd float64) []float32 {
	row := make([]float32, n)
	for i := range row {
		row[i] = float32(r.NormFloat64() * sd)
	}
	return row
}

// randDist returns a random distribution over n tokens (a softmax of Gaussian logits).
func randDist(r *rand.Rand, n int) []float32 {
	q := randRow(r, n, 1.5)
	var sum float64
	for i, v := range q {
		q[i] = float32(math.Exp(float64(v)))
		sum += float64(q[i])
	}
	for i := range q {
		q[i] /= float32(sum)
	}
	return q
}

// drawTest draws from q with the test's own RNG.
func drawTest(r *rand.Rand, q []float32) int {
	u := r.Float64()
	for i, v := range q {
		if u -= float64(v); u < 0 {
			return i
		}
	}
	return len(q) - 1
}

// wantDist is the target's distribution for row after prompt and the generated tokens.
func wantDist(t *testing.T, p Params, prompt, generated []int, row []float32) []float64 {
	s := mustNew(t, p)
	s.SetPrompt(prompt)
	for _, id := range generated {
		s.Accept(id)
	}
	return slices.Clone(s.dist(s.processed(row)))
}

// TestVerifyRejectionFirstToken: the first token Verify returns is distributed as p_0, for
// drafts drawn from another distribution q and for point-mass drafts (n-gram style), with and
// without top-k, top-p and min-p.
func TestVerifyRejectionFirstToken(t *testing.T) {
	const k = 3
	r := rand.New(rand.NewPCG(21, 21))
	plain := Params{Temperature: 1, Logprobs: true}
	cut := Params{Temperature: 0.8, TopK: 6, TopP: 0.9, MinP: 0.03, Logprobs: true}
	for ci, c := range []struct {
		name  string
		p     Params
		draft string // q: drafts from random q; likely/unlikely/random: point masses
	}{
		{"q", plain, "q"}, {"point-likely", plain, "likely"}, {"point-unlikely", plain, "unlikely"},
		{"point-random", plain, "random"}, {"cut-q", cut, "q"}, {"cut-point-likely", cut, "likely"},
		{"cut-point-random", cut, "random"},
		// Past plainDistMax: the distribution takes the draw's shortcuts.
		{"large-q", Params{Temperature: 1, TopP: 0.97, Logprobs: true}, "q"},
		{"large-point", Params{Temperature: 1, TopK: 50, MinP: 0.001, Logprobs: true}, "likely"},
	} {
		V := 10
		if strings.HasPrefix(c.name, "large") {
			V = plainDistMax + 100
		}
		t.Run(c.name, func(t *testing.T) {
			c.p.Seed = uint64(100 + ci)
			logits := randRow(r, (k+1)*V, 1.5)
			want := wantDist(t, c.p, nil, nil, logits[:V])
			s := mustNew(t, c.p)
			counts := make([]int, V)
			accepted := 0
			drafts := make([]int, k)
			pool := make([][]float32, 64) // the q to choose from
			for i := range pool {
				pool[i] = randDist(r, V)
			}
			for range specTrials {
				var q [][]float32
				switch c.draft {
				case "q":
					q = make([][]float32, k)
					for i := range q {
						q[i] = pool[r.IntN(len(pool))]
						drafts[i] = drawTest(r, q[i])
					}
				case "likely":
					for i := range drafts {
						drafts[i] = argmax32(logits[i*V : (i+1)*V])
					}
				case "unlikely":
					for i := range drafts {
						drafts[i] = (argmax32(logits[i*V:(i+1)*V]) + 1) % V
					}
				default:
					for i := range drafts {
						drafts[i] = r.IntN(V)
					}
				}
				res, err := s.Verify(logits, V, drafts, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(res) < 1 || len(res) > k+1 || res[0].Logprob >= 0 {
					t.Fatalf("results %+v", res)
				}
				for i := range res[:len(res)-1] {
					if res[i].ID != drafts[i] {
						t.Fatalf("result %d is %d, not the accepted draft %d", i, res[i].ID, drafts[i])
					}
				}
				counts[res[0].ID]++
				if res[0].ID == drafts[0] {
					accepted++
				}
			}
			if pv := chiSquareP(t, counts, want); pv < 0.01 {
				t.Errorf("p-value %.3g: counts %v, want %v", pv, counts, want)
			}
			t.Logf("first draft accepted %.1f%% (p-value > 0.01)", 100*float64(accepted)/specTrials)
		})
	}
}

func argmax32(row []float32) int {
	x := make([]float64, len(row))
	for i, v := range row {
		x[i] = float64(v)
	}
	return argmax(x)
}

// specModel is a toy language model over V tokens: deterministic logits for each context.
func specModel(seed uint64, ctx []int, V int) []float32 {
	h := seed
	for _, id := range ctx {
		h = (h ^ uint64(id+1)) * 0x100000001b3
	}
	return randRow(rand.New(rand.NewPCG(h, seed)), V, 1.3)
}

// TestVerifyRejectionJoint: the first two generated tokens, produced by rounds of Verify with
// k = 2 drafts (from a toy draft model's q, or its greedy point masses) against a toy target,
// are jointly distributed as the target's tokens drawn one by one, penalties (which see the
// accepted drafts) and cuts included.
func TestVerifyRejectionJoint(t *testing.T) {
	const V, k = 5, 2
	prompt := []int{0, 1}
	base := Params{Temperature: 0.9, TopK: 4, TopP: 0.95, MinP: 0.02, RepetitionPenalty: 1.3,
		PresencePenalty: 0.4, FrequencyPenalty: 0.3}
	target := func(ctx []int) []float32 { return specModel(1, ctx, V) }
	for _, mode := range []string{"q", "point"} {
		t.Run(mode, func(t *testing.T) {
			want := make([]float64, V*V)
			p0 := wantDist(t, base, prompt, nil, target(prompt))
			for t0 := range V {
				p1 := wantDist(t, base, prompt, []int{t0}, target(append(slices.Clone(prompt), t0)))
				for t1 := range V {
					want[t0*V+t1] = p0[t0] * p1[t1]
				}
			}
			r := rand.New(rand.NewPCG(22, 22))
			draft := mustNew(t, Params{Temperature: 1}) // for the draft model's q
			counts := make([]int, V*V)
			for trial := range specTrials {
				p := base
				p.Seed = uint64(trial)
				s := mustNew(t, p)
				s.SetPrompt(prompt)
				ctx := slices.Clone(prompt)
				for len(ctx) < len(prompt)+2 {
					var drafts []int
					var q [][]float32
					logits := target(ctx)
					for range k {
						dctx := append(slices.Clone(ctx), drafts...)
						qi, _ := draft.Distribution(nil, specModel(2, dctx, V))
						var d int
						if mode == "q" {
							d = drawTest(r, qi)
							q = append(q, qi)
						} else {
							d = argmax32(qi)
						}
						drafts = append(drafts, d)
						logits = append(logits, target(append(dctx, d))...)
					}
					res, err := s.Verify(logits, V, drafts, q)
					if err != nil {
						t.Fatal(err)
					}
					for _, x := range res {
						ctx = append(ctx, x.ID)
					}
				}
				counts[ctx[2]*V+ctx[3]]++
			}
			if pv := chiSquareP(t, counts, want); pv < 0.01 {
				t.Errorf("p-value %.3g:\ncounts %v\nwant   %v", pv, counts, scaled(want, specTrials))
			}
		})
	}
}

func scaled(p []float64, n int) string {
	s := ""
	for _, v := range p {
		s += fmt.Sprintf(" %.0f", v*float64(n))
	}
	return s
}

// TestVerifyRandomDeterministic: the same seed gives the same verification; bad draft
// distributions are errors.
func TestVerifyRandomDeterministic(t *testing.T) {
	const V = 7
	r := rand.New(rand.NewPCG(23, 23))
	logits := randRow(r, 4*V, 1)
	q := [][]float32{randDist(r, V), randDist(r, V), randDist(r, V)}
	run := func() []int {
		s := mustNew(t, Params{Temperature: 1, Seed: 5, FrequencyPenalty: 0.5})
		var ids []int
		for range 50 {
			res, err := s.Verify(logits, V, []int{1, 2, 3}, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range res {
				ids = append(ids, x.ID)
			}
		}
		return ids
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Fatalf("same seed, different tokens: %v vs %v", a, b)
	}
	s := mustNew(t, Params{Temperature: 1})
	for _, bad := range [][]float32{make([]float32, V), {1, -1, 0, 0, 0, 0, 0}, {float32(math.NaN()), 1, 0, 0, 0, 0, 0}} {
		if _, err := s.Verify(logits[:2*V], V, []int{1}, [][]float32{bad}); err == nil {
			t.Errorf("draft distribution %v accepted", bad)
		}
	}
}

// BenchmarkVerifyRandom32k: verification of 4 point-mass drafts (the first rejected half the
// time or so) on a 32,000-token vocabulary, and Distribution alone, under common parameters.
func BenchmarkVerifyRandom32k(b *testing.B) {
	const V, k = 32000, 4
	r := rand.New(rand.NewPCG(1, 2))
	logits := randRow(r, (k+1)*V, 3)
	drafts := make([]int, k)
	for i := range drafts {
		drafts[i] = argmax32(logits[i*V : (i+1)*V])
	}
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"temperature", Params{Temperature: 1}},
		{"top-k40", Params{Temperature: 1, TopK: 40}},
		{"top-p0.9", Params{Temperature: 1, TopP: 0.9}},
		{"min-p0.05", Params{Temperature: 1, MinP: 0.05}},
	} {
		s := mustNew(b, c.p)
		b.Run("verify-"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Verify(logits, V, drafts, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("distribution-"+c.name, func(b *testing.B) {
			var q []float32
			for b.Loop() {
				q, _ = s.Distribution(q, logits[:V])
			}
		})
	}
}

// TestVerifyRandomSupport: on the equivalence tests' rows (ties, -inf, NaN, +inf) and
// parameters, Verify at temperature > 0 returns 1 to k+1 tokens, the accepted drafts first, and
// every token has a positive probability in the target's distribution at its position (with
// the history so far).
func TestVerifyRandomSupport(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 24))
	for _, c := range []struct{ n, rows int }{{100, 1500}, {1000, 300}, {32000, 20}} {
		for row := range c.rows {
			p := equivParams(r, c.n)
			if p.Temperature == 0 {
				p.Temperature = 1
			}
			k := 1 + r.IntN(4)
			logits := make([]float32, 0, (k+1)*c.n)
			for range k + 1 {
				logits = append(logits, equivLogits(r, c.n)...)
			}
			drafts := make([]int, k)
			var q [][]float32
			if r.IntN(2) == 0 {
				q = make([][]float32, k)
			}
			for i := range drafts {
				if q != nil {
					q[i] = randDist(r, c.n)
					drafts[i] = drawTest(r, q[i])
				} else {
					drafts[i] = r.IntN(c.n)
				}
			}
			prompt := []int{r.IntN(c.n)}
			s, check := mustNew(t, p), mustNew(t, p)
			s.SetPrompt(prompt)
			check.SetPrompt(prompt)
			res, err := s.Verify(logits, c.n, drafts, q)
			if err != nil || len(res) < 1 || len(res) > k+1 {
				t.Fatalf("V=%d row %d: %d results, %v", c.n, row, len(res), err)
			}
			for i, x := range res {
				if i < len(res)-1 && x.ID != drafts[i] {
					t.Fatalf("V=%d row %d: result %d is %d, not the accepted draft %d", c.n, row, i, x.ID, drafts[i])
				}
				if pd := check.dist(check.processed(logits[i*c.n : (i+1)*c.n])); !(pd[x.ID] > 0) {
					t.Fatalf("V=%d row %d %+v: token %d at %d has probability %v", c.n, row, p, x.ID, i, pd[x.ID])
				}
				check.Accept(x.ID)
			}
		}
	}
}
