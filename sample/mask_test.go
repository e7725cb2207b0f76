// Tests of SampleMasked: an all-ones mask changes nothing (same ids, same RNG stream), the
// chosen token is always allowed whatever the parameters, the draw follows the distribution
// renormalized over the allowed tokens, logprobs stay those of the raw distribution, and the
// edge cases (no token allowed, a short mask, allowed tokens at -inf) behave.
package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func setBit(mask []uint64, id int) { mask[id/64] |= 1 << (id % 64) }

func randLogits(r *rand.Rand, n int) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
	}
	return l
}

var maskParams = []Params{
	{},
	{Temperature: 1, Seed: 1},
	{Temperature: 0.7, TopK: 5, Seed: 2},
	{Temperature: 1.2, TopP: 0.8, Seed: 3},
	{Temperature: 1, MinP: 0.2, Seed: 4},
	{Temperature: 1, TopK: 40, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.3, PresencePenalty: 0.5,
		FrequencyPenalty: 0.2, LogitBias: map[int]float64{3: 20, 70: -5}, Seed: 5},
}

func TestMaskAllOnesIsIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const V = 300 // not a multiple of 64
	full := make([]uint64, (V+63)/64)
	for i := range V {
		setBit(full, i)
	}
	for _, p := range maskParams {
		p.Logprobs, p.TopLogprobs = true, 3
		a, b := mustNew(t, p), mustNew(t, p)
		for step := range 200 {
			l := randLogits(r, V)
			ra, err1 := a.Sample(l)
			rb, err2 := b.SampleMasked(l, full)
			if err1 != nil || err2 != nil || ra.ID != rb.ID || ra.Logprob != rb.Logprob || len(ra.Top) != len(rb.Top) {
				t.Fatalf("%+v step %d: Sample %+v (%v), SampleMasked all-ones %+v (%v)", p, step, ra, err1, rb, err2)
			}
		}
	}
}

func TestMaskChosenAlwaysAllowed(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const V = 1000
	mask := make([]uint64, (V+63)/64)
	for _, p := range maskParams {
		s := mustNew(t, p)
		for step := range 500 {
			clear(mask)
			k := 1 + r.IntN(1+step%50) // from a single forced token to a few dozen
			for range k {
				setBit(mask, r.IntN(V))
			}
			l := randLogits(r, V)
			res, err := s.SampleMasked(l, mask)
			if err != nil {
				t.Fatal(err)
			}
			if !allowed(mask, res.ID) {
				t.Fatalf("%+v step %d: chose %d, not allowed", p, step, res.ID)
			}
		}
	}
}

func TestMaskGreedyAndLogprobs(t *testing.T) {
	s := mustNew(t, Params{Logprobs: true, TopLogprobs: 2})
	logits := []float32{5, 1, 4, 3, 0}
	mask := []uint64{0b11010} // tokens 1, 3, 4
	r, err := s.SampleMasked(logits, mask)
	if err != nil || r.ID != 3 {
		t.Fatalf("greedy over {1,3,4}: %+v (%v), want 3", r, err)
	}
	// Logprobs are those of the unmasked distribution; the top list may name masked tokens.
	raw, _ := mustNew(t, Params{Logprobs: true, TopLogprobs: 2}).Sample(logits)
	lp3, _ := logprobs(logits, 3, 0)
	if r.Logprob != lp3 || r.Top[0] != raw.Top[0] || r.Top[1] != raw.Top[1] || r.Top[0].ID != 0 {
		t.Fatalf("logprobs %+v, want raw %v with top %+v", r, lp3, raw.Top)
	}
}

func TestMaskStatistical(t *testing.T) {
	probs := []float64{0.4, 0.3, 0.2, 0.08, 0.02}
	logits := make([]float32, len(probs))
	for i, p := range probs {
		logits[i] = float32(math.Log(p))
	}
	mask := []uint64{0b11010} // tokens 1, 3, 4: 0.3, 0.08, 0.02 renormalized over 0.4
	const n = 20000
	for _, c := range []struct {
		p    Params
		want []float64
	}{
		{Params{Temperature: 1, Seed: 1}, []float64{0, 0.75, 0, 0.2, 0.05}},
		{Params{Temperature: 1, TopK: 2, Seed: 2}, []float64{0, 0.3 / 0.38, 0, 0.08 / 0.38, 0}},
		// top-p 0.9 over the renormalized allowed set: 0.75 < 0.9, +0.2 = 0.95 -> keep two.
		{Params{Temperature: 1, TopP: 0.9, Seed: 3}, []float64{0, 0.3 / 0.38, 0, 0.08 / 0.38, 0}},
		// min-p 0.25 relative to the most likely allowed token (0.3): keeps p >= 0.075.
		{Params{Temperature: 1, MinP: 0.25, Seed: 4}, []float64{0, 0.3 / 0.38, 0, 0.08 / 0.38, 0}},
	} {
		s := mustNew(t, c.p)
		got := make([]float64, len(probs))
		for range n {
			r, err := s.SampleMasked(logits, mask)
			if err != nil {
				t.Fatal(err)
			}
			got[r.ID]++
		}
		for i := range got {
			got[i] /= n
		}
		checkFreqs(t, "masked", got, c.want, n)
	}
}

func TestMaskEdgeCases(t *testing.T) {
	logits := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	for _, p := range []Params{{}, {Temperature: 1}} {
		s := mustNew(t, p)
		if _, err := s.SampleMasked(logits, []uint64{0}); err == nil {
			t.Error("an empty mask was accepted")
		}
		if _, err := s.SampleMasked(logits, []uint64{1 << 10}); err == nil {
			t.Error("a mask allowing only a token past the vocabulary was accepted")
		}
		if _, err := s.SampleMasked(make([]float32, 100), []uint64{}); err == nil {
			t.Error("a zero-length mask was accepted")
		}
		// A mask shorter than the vocabulary: tokens past it are not allowed.
		l := make([]float32, 100)
		l[99] = 50
		if r, err := s.SampleMasked(l, []uint64{1 << 5}); err != nil || r.ID != 5 {
			t.Errorf("short mask: %+v (%v), want 5", r, err)
		}
		// Allowed tokens whose logits are -inf still give an allowed token.
		b := mustNew(t, Params{Temperature: p.Temperature, LogitBias: map[int]float64{2: math.Inf(-1), 6: math.Inf(-1)}})
		if r, err := b.SampleMasked(logits, []uint64{1<<2 | 1<<6}); err != nil || r.ID != 2 {
			t.Errorf("allowed tokens at -inf: %+v (%v), want 2", r, err)
		}
	}
}

// BenchmarkSampleMasked32k: a draw from a 32,000-token vocabulary under a mask allowing 1%.
func BenchmarkSampleMasked32k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	logits := randLogits(r, 32000)
	mask := make([]uint64, 500)
	for range 320 {
		setBit(mask, r.IntN(32000))
	}
	for _, p := range []Params{{}, {Temperature: 1, TopP: 0.9}} {
		s := mustNew(b, p)
		b.Run(map[bool]string{true: "greedy", false: "top-p0.9"}[p.Temperature == 0], func(b *testing.B) {
			for b.Loop() {
				if _, err := s.SampleMasked(logits, mask); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMaskedArgmaxDense: with most tokens allowed (the unmasked argmax shortcut) and with few,
// greedy under a mask equals argmax after applyMask.
func TestMaskedArgmaxDense(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const V = 700
	for trial := range 400 {
		mask := make([]uint64, (V+63)/64)
		p := []float64{0.02, 0.5, 0.98}[trial%3]
		for i := range V {
			if r.Float64() < p {
				setBit(mask, i)
			}
		}
		x := make([]float64, V)
		for i := range x {
			x[i] = float64(r.IntN(20)) // ties
		}
		want := slices.Clone(x)
		if !applyMask(want, mask) {
			continue
		}
		if got, w := maskedArgmax(x, mask), argmax(want); got != w {
			t.Fatalf("trial %d (density %v): maskedArgmax %d, argmax after applyMask %d", trial, p, got, w)
		}
	}
}
