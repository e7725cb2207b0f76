// The fast sampling paths against the reference (reference_test.go): on random logit rows,
// parameters, masks and seeds, every result (id, logprob, top logprobs, error) is identical.
package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// equivLogits draws a logit row of one of several shapes: Gaussian, heavy-tailed (a few
// dominant tokens), few distinct values (many exact ties), with -inf entries, or with a NaN or
// +inf.
func equivLogits(r *rand.Rand, n int) []float32 {
	l := make([]float32, n)
	kind := r.IntN(10)
	for i := range l {
		switch kind {
		case 0, 1, 2:
			l[i] = float32(r.NormFloat64() * 3)
		case 3, 4:
			l[i] = float32(r.NormFloat64()*2 - 5)
			if r.IntN(200) == 0 {
				l[i] = float32(10 + r.Float64()*15)
			}
		case 5, 6:
			l[i] = float32(r.IntN(6)) * 0.75
		case 7:
			l[i] = float32(r.NormFloat64() * 40) // wide: underflow and min-p skips
		case 8:
			l[i] = float32(r.NormFloat64())
			if r.IntN(3) == 0 {
				l[i] = float32(math.Inf(-1))
			}
		default:
			l[i] = float32(r.NormFloat64() * 2)
		}
	}
	if kind == 9 {
		bad := []float32{float32(math.NaN()), float32(math.Inf(1))}
		for range 1 + r.IntN(2) {
			l[r.IntN(n)] = bad[r.IntN(2)]
		}
	}
	return l
}

func equivParams(r *rand.Rand, n int) Params {
	pick := func(v ...float64) float64 { return v[r.IntN(len(v))] }
	p := Params{
		Temperature: pick(0, 0.5, 0.8, 1, 1, 1, 1.3),
		TopK:        []int{0, 0, 0, 1, 5, 40, 1000, n + 5}[r.IntN(8)],
		TopP:        pick(0, 1, 1, 0.5, 0.9, 0.95, 0.95, 0.999, 0.99999),
		MinP:        pick(0, 0, 0, 0.01, 0.2),
		Seed:        r.Uint64(),
		Logprobs:    r.IntN(3) == 0,
		TopLogprobs: []int{0, 0, 0, 1, 5, 20}[r.IntN(6)],
	}
	if r.IntN(4) == 0 {
		p.RepetitionPenalty = 1.3
		p.PresencePenalty = 0.5
		p.FrequencyPenalty = 0.2
		p.LogitBias = map[int]float64{r.IntN(n): 8, r.IntN(n): -100}
	}
	return p
}

func equivMask(r *rand.Rand, n int) []uint64 {
	density := []float64{-1, -1, 0.001, 0.01, 0.5, 0.95}[r.IntN(6)]
	if density < 0 {
		return nil
	}
	mask := make([]uint64, (n+63)/64)
	for i := range n {
		if r.Float64() < density {
			setBit(mask, i)
		}
	}
	setBit(mask, r.IntN(n)) // at least one
	return mask
}

func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func sameResult(a, b Result) error {
	if a.ID != b.ID || !sameFloat(a.Logprob, b.Logprob) || len(a.Top) != len(b.Top) {
		return fmt.Errorf("id %d logprob %v (%d top) vs id %d logprob %v (%d top)",
			a.ID, a.Logprob, len(a.Top), b.ID, b.Logprob, len(b.Top))
	}
	for i := range a.Top {
		if a.Top[i].ID != b.Top[i].ID || !sameFloat(a.Top[i].Logprob, b.Top[i].Logprob) {
			return fmt.Errorf("top %d: %+v vs %+v", i, a.Top[i], b.Top[i])
		}
	}
	return nil
}

func TestFastMatchesReference(t *testing.T) {
	rows := map[int]int{100: 3000, 32000: 150, 151646: 20}
	if testing.Short() {
		rows = map[int]int{100: 500, 32000: 30, 151646: 4}
	}
	compareWithReference(t, rand.New(rand.NewPCG(16, 16)), rows)
}

// TestExactFallbacksMatchReference: with the margins made huge, every draw takes the exact
// fallback paths (the walk with math.Exp, the full sort under top-p), which must match too.
func TestExactFallbacksMatchReference(t *testing.T) {
	marginScale = 1e15
	defer func() { marginScale = 1 }()
	compareWithReference(t, rand.New(rand.NewPCG(17, 17)), map[int]int{100: 1000, 32000: 20})
}

func compareWithReference(t *testing.T, r *rand.Rand, rows map[int]int) {
	for _, n := range []int{100, 32000, 151646} {
		for row := range rows[n] {
			logits := equivLogits(r, n)
			p := equivParams(r, n)
			mask := equivMask(r, n)
			fast, ref := mustNew(t, p), mustNew(t, p)
			ref.refDraw = (*Sampler).drawReference
			ref.refLogprobs = logprobsReference
			prompt := []int{r.IntN(n), r.IntN(n)}
			fast.SetPrompt(prompt)
			ref.SetPrompt(prompt)
			for step := range 3 {
				a, errA := fast.SampleMasked(logits, mask)
				b, errB := ref.SampleMasked(logits, mask)
				if (errA == nil) != (errB == nil) {
					t.Fatalf("V=%d row %d step %d %+v: error %v vs reference %v", n, row, step, p, errA, errB)
				}
				if err := sameResult(a, b); err != nil {
					t.Fatalf("V=%d row %d step %d %+v mask %v: %v", n, row, step, p, mask != nil, err)
				}
			}
		}
	}
}
