// Top-p without sorting the vocabulary. The nucleus is the smallest most-likely-first prefix
// whose cumulative probability reaches TopP; it is usually a small part of a vocabulary. A
// histogram of the probabilities (by the top bits of their float64 encoding) gives a threshold
// above which the candidates surely hold more than TopP of the mass; only those are sorted.
//
// The cut must be the one the plain algorithm finds, which divides by the sum of the exact
// probabilities of all candidates added most likely first. The sum here is of the approximate
// ones (walk.go) added in id order: both are within expErr plus a few units in the last place
// per term of the true sum, so the cumulative values differ by at most a relative margin m. The
// sorted candidates get exact probabilities; the cut is taken when no prefix comes within m of
// TopP around it, otherwise (very rarely) the plain full sort decides.
package sample

import (
	"math"
	"slices"
)

const (
	nucleusShift   = 46                                 // float64 bits kept per bucket: exponent + 6 mantissa bits
	nucleusBuckets = 64 << 6                            // 64 octaves below 1, 64 buckets each; the last holds the rest
	nucleusTop     = 0x3ff0000000000000 >> nucleusShift // the bucket key of 1.0
)

// bucket is the histogram bucket of a probability e in (0, 1]: 0 holds 1, higher buckets hold
// smaller values, the last one everything below 2^-32.
func bucket(e float64) int {
	b := nucleusTop - int(math.Float64bits(e)>>nucleusShift)
	return min(max(b, 0), nucleusBuckets-1)
}

// nucleus draws under top-p (and no top-k cut); s.hist holds the candidates' mass per bucket.
func (s *Sampler) nucleus(pr *probs) int { return s.drawFrom(s.nucleusSet(pr)) }

// nucleusSet returns the candidates to draw from under top-p, most likely first, with their
// exact probabilities, and whether they still need the top-p cut (cutTopP).
func (s *Sampler) nucleusSet(pr *probs) ([]cand, bool) {
	p, hist := s.p.TopP, s.hist
	// Relative bound between this code's cumulative values and the plain algorithm's, with a
	// factor of 2 to spare: expErr in the sum, and a half-ulp per addition and division.
	m := (4*expErr + float64(8*(pr.n+64))*0x1p-53) * marginScale
	need := p * pr.kept * (1 + 4*m)
	var acc float64
	tau := 0.0 // the candidates of at least tau are sorted
	for b, h := range hist[:nucleusBuckets-1] {
		if acc += h; acc >= need {
			tau = math.Float64frombits(uint64(nucleusTop-b) << nucleusShift)
			break
		}
	}
	cs := s.nucleusCands(pr, tau)
	var sum float64
	for j, c := range cs {
		sum += c.v
		cum := sum / pr.kept
		if cum*(1+m) >= p {
			if cum*(1-m) < p {
				break // too close to call
			}
			return cs[:j+1], false
		}
	}
	pr.exact()
	return s.collect(pr.p, pr.lim, 0), true
}

// nucleusCands returns the candidates whose exact probability is at least tau, most likely
// first (ties by lower id): placed by histogram bucket in id order, then each bucket sorted.
func (s *Sampler) nucleusCands(pr *probs, tau float64) []cand {
	gathered := s.gathered[:0]
	lo := tau * (1 - 4*expErr)
	for i, e := range pr.p {
		if pr.candidate(e) && e >= lo {
			if e = math.Exp(pr.x[i] - pr.mx); e >= tau {
				gathered = append(gathered, cand{e, i})
			}
		}
	}
	s.gathered = gathered
	count := s.count
	clear(count)
	for _, c := range gathered {
		count[bucket(c.v)+1]++
	}
	for b := 1; b < len(count); b++ { // count[b] becomes the start of bucket b
		count[b] += count[b-1]
	}
	if cap(s.cands) < len(gathered) {
		s.cands = make([]cand, len(gathered))
	}
	cs := s.cands[:len(gathered)]
	for _, c := range gathered {
		b := bucket(c.v)
		cs[count[b]] = c
		count[b]++
	}
	// Now count[b] is the end of bucket b.
	start := 0
	for b := range nucleusBuckets {
		seg := cs[start:count[b]]
		start = count[b]
		if len(seg) > 64 {
			slices.SortFunc(seg, candCmp)
			continue
		}
		for i := 1; i < len(seg); i++ { // insertion: stable, so equal values stay in id order
			c := seg[i]
			j := i
			for j > 0 && seg[j-1].v < c.v {
				seg[j] = seg[j-1]
				j--
			}
			seg[j] = c
		}
	}
	return cs
}
