// The sampler's distribution as a vector: what Sample draws from, after every step of the
// package documentation (bias, penalties, temperature, min-p, top-k, top-p, renormalized).
// Speculative decoding needs it whole: a draft proposer samples its drafts from it (q), and
// Verify's rejection sampling compares the target's (p) with q token by token. The plain
// algorithm is used (the operations of reference_test.go's drawReference, so the same tokens
// get the same probabilities); it sorts the candidates only under top-p.
package sample

import (
	"fmt"
	"math"
)

// Distribution returns the probabilities Sample would draw the next token from given logits
// ([vocab]; not modified), with the sampler's parameters and history: steps 1-8 of the package
// documentation, renormalized over the tokens they keep (the others are 0). At temperature 0 it
// is a point mass at the greedy choice. It reuses dst's capacity, records nothing and draws no
// random number. Logits with a NaN or +inf give what the draw gives: a point mass.
func (s *Sampler) Distribution(dst []float32, logits []float32) ([]float32, error) {
	if err := s.checkRow(len(logits)); err != nil {
		return dst, err
	}
	p := s.dist(s.processed(logits))
	if cap(dst) < len(p) {
		dst = make([]float32, len(p))
	}
	dst = dst[:len(p)]
	for i, v := range p {
		dst[i] = float32(v)
	}
	return dst, nil
}

// DrawFrom draws a token from q (probabilities over the vocabulary, not necessarily
// normalized: token i has q[i]/sum(q)) with the sampler's seeded RNG, walking the tokens in id
// order. It records nothing. It returns -1 when q has no positive finite sum.
func (s *Sampler) DrawFrom(q []float32) int {
	var sum float64
	last := -1
	for i, v := range q {
		if v > 0 {
			sum += float64(v)
			last = i
		}
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return -1
	}
	u := s.rng.Float64() * sum
	for i, v := range q[:last+1] {
		if v > 0 {
			if u -= float64(v); u < 0 {
				return i
			}
		}
	}
	return last
}

// checkRow reports the errors Sample reports for a row of n logits.
func (s *Sampler) checkRow(n int) error {
	if n == 0 {
		return fmt.Errorf("sample: empty logits")
	}
	for id := range s.p.LogitBias {
		if id < 0 || id >= n {
			return fmt.Errorf("sample: logit bias for token %d outside vocabulary of %d", id, n)
		}
	}
	return nil
}

// dist applies steps 4-8 to x (processed logits; overwritten) and returns the normalized
// distribution (a reused buffer of len(x)).
func (s *Sampler) dist(x []float64) []float64 {
	if cap(s.dbuf) < len(x) {
		s.dbuf = make([]float64, len(x))
	}
	p := s.dbuf[:len(x)]
	clear(p)
	if s.p.Temperature == 0 {
		p[argmax(x)] = 1
		return p
	}
	t := s.p.Temperature
	mx := math.Inf(-1)
	for i := range x {
		x[i] /= t
		mx = math.Max(mx, x[i]) // NaN makes mx NaN and leaves no candidate, as in the draw
	}
	for i := range x {
		x[i] = math.Exp(x[i] - mx)
	}
	lim := 0.0
	if s.p.MinP > 0 {
		lim = s.p.MinP
	}
	topP := s.p.TopP > 0 && s.p.TopP < 1
	var cs []cand
	switch n := countCands(x, lim); {
	case n == 0:
		p[argmax(x)] = 1
		return p
	case s.p.TopK > 0 && s.p.TopK < n:
		cs = s.topK(x, lim, s.p.TopK) // most likely first
	case topP:
		cs = s.collect(x, lim, 0) // most likely first
	default:
		cs = s.cands[:0] // id order
		for i, e := range x {
			if e > 0 && e >= lim {
				cs = append(cs, cand{e, i})
			}
		}
		s.cands = cs
	}
	kept := 0.0
	for _, c := range cs {
		kept += c.v
	}
	if topP {
		var cum float64
		k := 0
		for k < len(cs) {
			cum += cs[k].v / kept
			k++
			if cum >= s.p.TopP {
				break
			}
		}
		cs = cs[:k]
		kept = 0
		for _, c := range cs {
			kept += c.v
		}
	}
	for _, c := range cs {
		p[c.id] = c.v / kept
	}
	return p
}

// countCands counts the candidates of x (probabilities): non-zero and at least lim.
func countCands(x []float64, lim float64) int {
	n := 0
	for _, e := range x {
		if e > 0 && e >= lim {
			n++
		}
	}
	return n
}
