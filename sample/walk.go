// The probabilities of a draw and the draw without a cut. The plain algorithm takes math.Exp of
// every token; here the candidates get expApprox (a relative error below expErr), which is
// enough to decide the draw whenever the random point is not within a small margin of a token's
// boundary. Only then (rarely) are the exact values computed and the plain walk repeated with
// the same random number.
package sample

import "math"

// marginScale multiplies the margins under which the approximate probabilities decide; tests
// raise it to send every draw to the exact fallbacks.
var marginScale = 1.0

// probs holds one draw's probabilities.
type probs struct {
	x       []float64 // logits after the temperature
	p       []float64 // exp(x - mx), approximate or exact; candidate status always exact
	mx, lim float64   // the largest logit; MinP (0 = none)
	cut     float64   // logits below cut surely are not candidates (p = 0)
	n, last int       // number of candidates, the last one's id (-1 = none)
	kept    float64   // the candidates' p added in id order
}

// candidate reports whether probability e is a candidate: non-zero, at least MinP.
func (pr *probs) candidate(e float64) bool { return e > 0 && e >= pr.lim }

// probabilities computes x's probabilities (x has no NaN and a finite maximum mx), and with a
// non-nil hist (zeroed, nucleusBuckets long) the candidates' probability mass per bucket.
func (s *Sampler) probabilities(x []float64, mx, lim float64, hist []float64) probs {
	// exp underflows to 0 below -745; under min-p, exp(x-mx) < MinP with a margin far above
	// rounding.
	cut := mx - 800
	if lim > 0 {
		cut = max(cut, mx+math.Log(lim)-1e-6-math.Abs(mx)*1e-14)
	}
	if cap(s.pbuf) < len(x) {
		s.pbuf = make([]float64, len(x))
	}
	p := s.pbuf[:len(x)]
	var kept float64
	n, last := 0, -1
	// Near MinP the exact value decides candidacy: outside [lo, hi) the approximate one agrees.
	lo, hi := lim*(1-4*expErr), lim*(1+4*expErr)
	for i, v := range x {
		d := v - mx
		var e float64
		switch {
		case v < cut:
		case d >= -700:
			if e = expApprox(d); e >= lo && e < hi {
				e = math.Exp(d)
			}
		default:
			e = math.Exp(d)
		}
		p[i] = e
		if e > 0 && e >= lim {
			kept += e
			n++
			last = i
			if hist != nil {
				hist[bucket(e)] += e
			}
		}
	}
	return probs{x: x, p: p, mx: mx, lim: lim, cut: cut, n: n, last: last, kept: kept}
}

// exact replaces the probabilities by math.Exp's (kept is then stale).
func (pr *probs) exact() {
	for i, v := range pr.x {
		if v < pr.cut {
			pr.p[i] = 0
		} else {
			pr.p[i] = math.Exp(v - pr.mx)
		}
	}
}

// walk draws from the candidates in id order (no cut).
func (s *Sampler) walk(pr *probs) int {
	r := s.rng.Float64()
	// Both this walk and the plain one stay within margin of r*sum - (sum of the ids before):
	// expErr per term, and a rounding per addition and subtraction, doubled to spare.
	margin := 2 * (2*expErr + float64(4*pr.n+8)*0x1p-53) * pr.kept * marginScale
	if u := r * pr.kept; u > margin {
		for i, e := range pr.p[:pr.last+1] {
			if !pr.candidate(e) {
				continue
			}
			next := u - e
			if next < 0 {
				if next < -margin && u > margin {
					return i
				}
				break
			}
			u = next
		}
	}
	pr.exact()
	kept := 0.0
	for _, e := range pr.p[:pr.last+1] {
		if pr.candidate(e) {
			kept += e
		}
	}
	u := r * kept
	for i, e := range pr.p[:pr.last+1] {
		if pr.candidate(e) {
			if u -= e; u < 0 {
				return i
			}
		}
	}
	return pr.last
}
