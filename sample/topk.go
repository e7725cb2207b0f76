// Top-k from the logits: only the K largest logits, and any within a hair of the K-th, can
// have one of the K largest probabilities, so only they need an exp. The K most likely are then
// chosen among them by probability (ties by lower id) exactly as over the whole vocabulary.
package sample

import "math"

// drawTopK is the top-k draw from x (logits after the temperature, max mx, no NaN) with
// candidates of probability >= lim. It reports false, having changed nothing and drawn no
// random number, when it cannot be sure more than k tokens are candidates.
func (s *Sampler) drawTopK(x []float64, mx, lim float64, k int, topP bool) (int, bool) {
	top, ok := s.topKCands(x, mx, lim, k)
	if !ok {
		return 0, false
	}
	return s.drawFrom(top, topP), true
}

// topKCands returns the k most likely candidates of x (as drawTopK), most likely first, with
// their exact probabilities exp(x - mx); false when it cannot be sure more than k tokens are
// candidates.
func (s *Sampler) topKCands(x []float64, mx, lim float64, k int) ([]cand, bool) {
	// A logit of at least sure is surely a candidate: exp(x-mx) is far from 0 and from lim.
	sure := mx - 700
	if lim > 0 {
		sure = max(sure, mx+math.Log(lim)+1e-6+math.Abs(mx)*1e-14)
	}
	best := s.vals[:0] // the k largest logits, largest first
	nsure := 0
	for _, v := range x {
		if v >= sure {
			nsure++
		}
		if len(best) == k {
			if v <= best[k-1] {
				continue
			}
			best = best[:k-1]
		}
		j := len(best)
		best = append(best, 0)
		for j > 0 && best[j-1] < v {
			best[j] = best[j-1]
			j--
		}
		best[j] = v
	}
	s.vals = best
	if nsure <= k {
		return nil, false
	}
	// Tokens below thr have a probability strictly below the k-th largest logit's (the margin
	// is far above the rounding of x-mx and of exp), which k candidates at least reach.
	xk := best[k-1]
	thr := xk - 1e-9*(1+math.Abs(mx)+math.Abs(xk))
	top := s.cands[:0]
	for i, v := range x {
		if v < thr {
			continue
		}
		e := math.Exp(v - mx)
		if !(e > 0 && e >= lim) {
			continue
		}
		if len(top) == k {
			if e <= top[k-1].v { // equal: the kept one has the lower id
				continue
			}
			top = top[:k-1]
		}
		j := len(top)
		top = append(top, cand{})
		for j > 0 && top[j-1].v < e {
			top[j] = top[j-1]
			j--
		}
		top[j] = cand{e, i}
	}
	s.cands = top
	return top, true
}
