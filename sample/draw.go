// Steps 5-8 of the sampler (temperature, min-p, top-k, top-p, the draw) without sorting the
// vocabulary. Every path does the same floating-point operations, in the same order, as a full
// most-likely-first sort would (reference_test.go keeps that version and compares): top-k keeps
// a bounded insertion of the K best near the largest logits (topk.go), top-p sorts only the most
// likely tokens a histogram picks (nucleus.go), and without either the draw walks the candidates
// in id order (walk.go).
package sample

import (
	"math"
	"slices"
)

// cand is a candidate token: its unnormalized probability exp(x - max) and its id.
type cand struct {
	v  float64
	id int
}

// candCmp orders candidates most likely first, ties by lower id.
func candCmp(a, b cand) int {
	if a.v != b.v {
		if a.v > b.v {
			return -1
		}
		return 1
	}
	return a.id - b.id
}

// draw applies steps 5-8 to x (divided by the temperature in place) and samples an id.
func (s *Sampler) draw(x []float64) int {
	if s.refDraw != nil {
		return s.refDraw(s, x)
	}
	t := s.p.Temperature
	mx := math.Inf(-1)
	nan := false
	if t != 1 { // x/1 == x: no pass needed
		for i, v := range x {
			v /= t
			x[i] = v
			if v > mx {
				mx = v
			} else if v != v {
				nan = true
			}
		}
	} else {
		for _, v := range x {
			if v > mx {
				mx = v
			} else if v != v {
				nan = true
			}
		}
	}
	if nan || math.IsInf(mx, 0) {
		return s.drawSorted(x)
	}
	topP := s.p.TopP > 0 && s.p.TopP < 1
	// Probabilities are unnormalized (the most likely is exp(0) = 1). Candidates have a
	// non-zero probability of at least MinP.
	lim := 0.0
	if s.p.MinP > 0 {
		lim = s.p.MinP
	}
	if k := s.p.TopK; k > 0 && k < len(x) {
		if id, ok := s.drawTopK(x, mx, lim, k, topP); ok {
			return id
		}
	}
	var hist []float64 // for top-p
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
		return s.drawFrom(s.topK(pr.p, lim, k), topP)
	}
	if topP {
		return s.nucleus(&pr)
	}
	return s.walk(&pr)
}

// drawFrom draws from cs (in this order), first cutting it to the smallest prefix whose
// probability reaches TopP when topP is set.
func (s *Sampler) drawFrom(cs []cand, topP bool) int {
	if topP {
		cs = s.cutTopP(cs)
	}
	kept := 0.0
	for _, c := range cs {
		kept += c.v
	}
	u := s.rng.Float64() * kept
	for _, c := range cs {
		u -= c.v
		if u < 0 {
			return c.id
		}
	}
	return cs[len(cs)-1].id
}

// cutTopP returns the smallest prefix of cs (most likely first) whose probability, relative
// to all of cs, reaches TopP.
func (s *Sampler) cutTopP(cs []cand) []cand {
	kept := 0.0
	for _, c := range cs {
		kept += c.v
	}
	var cum float64
	k := 0
	for k < len(cs) {
		cum += cs[k].v / kept
		k++
		if cum >= s.p.TopP {
			break
		}
	}
	return cs[:k]
}

// topK returns the k most likely candidates of x (probabilities), most likely first: one pass
// with a bounded insertion (k is small next to a vocabulary).
func (s *Sampler) topK(x []float64, lim float64, k int) []cand {
	best := s.cands[:0]
	for i, e := range x {
		if !(e > 0 && e >= lim) {
			continue
		}
		if len(best) == k {
			if e <= best[k-1].v { // equal: the kept one has the lower id
				continue
			}
			best = best[:k-1]
		}
		j := len(best)
		best = append(best, cand{})
		for j > 0 && best[j-1].v < e {
			best[j] = best[j-1]
			j--
		}
		best[j] = cand{e, i}
	}
	s.cands = best
	return best
}

// collect returns the candidates of x (probabilities) of at least tau, most likely first.
func (s *Sampler) collect(x []float64, lim, tau float64) []cand {
	cs := s.cands[:0]
	lo := max(lim, tau)
	for i, e := range x {
		if e > 0 && e >= lo {
			cs = append(cs, cand{e, i})
		}
	}
	slices.SortFunc(cs, candCmp)
	s.cands = cs
	return cs
}

// drawSorted is steps 5-8 on x after the temperature when some value is NaN or the largest is
// infinite (x is overwritten by the probabilities):
// the plain algorithm (every candidate sorted), whose edge cases the fast path does not model.
func (s *Sampler) drawSorted(x []float64) int {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = math.Max(mx, v)
	}
	for i := range x {
		x[i] = math.Exp(x[i] - mx)
	}
	lim := 0.0
	if s.p.MinP > 0 {
		lim = s.p.MinP
	}
	cs := s.cands[:0]
	for i, e := range x {
		if e > 0 && e >= lim {
			cs = append(cs, cand{e, i})
		}
	}
	s.cands = cs
	if len(cs) == 0 {
		return argmax(x)
	}
	topP := s.p.TopP > 0 && s.p.TopP < 1
	if s.p.TopK > 0 && s.p.TopK < len(cs) {
		cs = s.topK(x, lim, s.p.TopK)
	} else if topP {
		slices.SortFunc(cs, candCmp)
	}
	return s.drawFrom(cs, topP)
}
