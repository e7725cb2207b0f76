// Tests of Distribution: the reference draw's tokens and probabilities exactly (to rounding),
// and Sample's and DrawFrom's draws follow it (chi-square, fixed seeds).
package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDistributionMatchesReference: Distribution keeps exactly the tokens the reference draw
// can choose, with its probabilities (its candidates' unnormalized probabilities over their
// sum) to within 1e-12 relative, on the row shapes and parameters of the equivalence tests;
// also with the margins made huge, so that the exact fallbacks decide.
func TestDistributionMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 19))
	defer func() { marginScale = 1 }()
	for _, scale := range []float64{1, 1e15} {
		marginScale = scale
		for _, c := range []struct{ n, rows int }{{100, 1000}, {1000, 1000}, {32000, 60}} {
			for row := range c.rows {
				logits := equivLogits(r, c.n)
				p := equivParams(r, c.n)
				s, ref := mustNew(t, p), mustNew(t, p)
				prompt := []int{r.IntN(c.n), r.IntN(c.n)}
				s.SetPrompt(prompt)
				ref.SetPrompt(prompt)
				got := s.dist(s.processed(logits))
				want := make([]float64, c.n)
				x := ref.processed(logits)
				if p.Temperature == 0 {
					want[argmax(x)] = 1
				} else if idx, kept := ref.keptReference(x); len(idx) == 0 {
					want[argmax(x)] = 1
				} else {
					for _, i := range idx {
						want[i] = x[i] / kept
					}
				}
				for i := range want {
					if (got[i] == 0) != (want[i] == 0) || math.Abs(got[i]-want[i]) > 1e-12*want[i] {
						t.Fatalf("scale %g V=%d row %d %+v: p[%d] = %v, reference %v", scale, c.n, row, p, i, got[i], want[i])
					}
				}
				f, err := s.Distribution(nil, logits)
				if err != nil || len(f) != c.n {
					t.Fatalf("Distribution: %d values, %v", len(f), err)
				}
			}
		}
	}
	if _, err := mustNew(t, Params{LogitBias: map[int]float64{7: 1}}).Distribution(nil, make([]float32, 5)); err == nil {
		t.Error("Distribution: logit bias outside the vocabulary accepted")
	}
}

// TestDistributionByDrawing: Sample's tokens and DrawFrom's follow Distribution.
func TestDistributionByDrawing(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 20))
	for i, p := range []Params{
		{Temperature: 1, Seed: 1},
		{Temperature: 0.7, TopK: 6, Seed: 2},
		{Temperature: 1.2, TopP: 0.8, MinP: 0.05, Seed: 3},
		{Temperature: 1, TopK: 9, TopP: 0.9, Seed: 4, LogitBias: map[int]float64{3: 2}},
	} {
		row := randRow(r, 12, 1.5)
		s := mustNew(t, p)
		want := slices.Clone(s.dist(s.processed(row)))
		q, err := s.Distribution(nil, row)
		if err != nil {
			t.Fatal(err)
		}
		sampled, drawn := make([]int, len(row)), make([]int, len(row))
		for range specTrials {
			drawn[s.DrawFrom(q)]++
			res, err := s.Sample(row) // no penalties: the history does not matter
			if err != nil {
				t.Fatal(err)
			}
			sampled[res.ID]++
		}
		for what, obs := range map[string][]int{"Sample": sampled, "DrawFrom": drawn} {
			if pv := chiSquareP(t, obs, want); pv < 0.01 {
				t.Errorf("case %d %s: p-value %.2g: counts %v, want %v", i, what, pv, obs, want)
			}
		}
	}
	if id := mustNew(t, Params{}).DrawFrom([]float32{0, -1}); id != -1 {
		t.Errorf("DrawFrom of nothing: %d", id)
	}
}
