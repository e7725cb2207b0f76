// The sampler's distribution as a vector: what Sample draws from, after every step of the
// package documentation (bias, penalties, temperature, min-p, top-k, top-p, renormalized).
// Speculative decoding needs it whole: a draft proposer samples its drafts from it (q), and
// Verify's rejection sampling compares the target's (p) with q token by token. It takes the
// draw's shortcuts (draw.go), so it keeps exactly the tokens the draw can choose, at about the
// cost of a draw.
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
// distribution (a reused buffer of len(x)). It takes the draw's paths (draw.go): the tokens
// kept are exactly the draw's; their probabilities are exact under a top-k or top-p cut, else
// within expErr (relative) of the exact ones.
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
	nan := false
	for i, v := range x {
		if t != 1 { // x/1 == x
			v /= t
			x[i] = v
		}
		if v > mx {
			mx = v
		} else if v != v {
			nan = true
		}
	}
	if nan || math.IsInf(mx, 0) || len(x) <= plainDistMax {
		return s.distPlain(x, p)
	}
	lim := 0.0
	if s.p.MinP > 0 {
		lim = s.p.MinP
	}
	topP := s.p.TopP > 0 && s.p.TopP < 1
	if k := s.p.TopK; k > 0 && k < len(x) {
		if cs, ok := s.topKCands(x, mx, lim, k); ok {
			return s.fill(p, cs, topP)
		}
	}
	var hist []float64
	if topP {
		if s.hist == nil {
			s.hist = make([]float64, nucleusBuckets)
			s.count = make([]int, nucleusBuckets+1)
		}
		hist = s.hist
		clear(hist)
	}
	pr := s.probabilities(x, mx, lim, hist)
	if k := s.p.TopK; k > 0 && k < pr.n {
		pr.exact()
		return s.fill(p, s.topK(pr.p, lim, k), topP)
	}
	if topP {
		cs, cut := s.nucleusSet(&pr)
		return s.fill(p, cs, cut)
	}
	for i, e := range pr.p[:pr.last+1] {
		if pr.candidate(e) {
			p[i] = e / pr.kept
		}
	}
	return p
}

// fill sets p (zeroed) to the distribution of the candidates cs, cut by top-p first if cut.
func (s *Sampler) fill(p []float64, cs []cand, cut bool) []float64 {
	if cut {
		cs = s.cutTopP(cs)
	}
	kept := 0.0
	for _, c := range cs {
		kept += c.v
	}
	for _, c := range cs {
		p[c.id] = c.v / kept
	}
	return p
}

// plainDistMax is the largest vocabulary for which dist takes the plain algorithm: cheap
// for a few hundred tokens, where the draw's shortcuts cost more in set-up than they save.
const plainDistMax = 256

// distPlain is dist for x after the temperature by the plain algorithm: for a small vocabulary,
// or with a NaN or an infinite maximum (as drawSorted).
func (s *Sampler) distPlain(x, p []float64) []float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, v) // NaN makes mx NaN and leaves no candidate, as in the draw
	}
	for i := range x {
		x[i] = math.Exp(x[i] - mx)
	}
	lim := 0.0
	if s.p.MinP > 0 {
		lim = s.p.MinP
	}
	n := countCands(x, lim)
	topP := s.p.TopP > 0 && s.p.TopP < 1
	switch {
	case n == 0:
		p[argmax(x)] = 1
		return p
	case s.p.TopK > 0 && s.p.TopK < n:
		return s.fill(p, s.topK(x, lim, s.p.TopK), topP)
	case topP:
		return s.fill(p, s.collect(x, lim, 0), true)
	}
	for i, e := range x {
		if e > 0 && e >= lim {
			p[i] = e
		}
	}
	kept := 0.0
	for _, e := range p {
		kept += e
	}
	for i := range p {
		p[i] /= kept
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
