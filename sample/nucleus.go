// Top-p without sorting the vocabulary. The nucleus is the smallest most-likely-first prefix
// whose cumulative probability reaches TopP; it is usually a small part of a vocabulary. A
// histogram of the probabilities (by the top bits of their float64 encoding) gives a threshold
// above which the candidates surely hold more than TopP of the mass; only those are sorted.
//
// The cut must be the one the plain algorithm finds, which divides by the sum of all candidates
// added most likely first. The sum here is added in id order instead: both are within a few
// units in the last place per term of the true sum, so the cumulative values differ by at most
// a relative margin m. The cut is taken when no prefix comes within m of TopP around it;
// otherwise (very rarely) the plain full sort decides.
package sample

import "math"

const (
	nucleusShift   = 46      // float64 bits kept per bucket: exponent + 6 mantissa bits
	nucleusBuckets = 64 << 6 // 64 octaves below 1, 64 buckets each; the last holds the rest
)

// nucleus draws under top-p (and no top-k cut) from the probabilities x: n candidates
// (probability > 0 and >= lim) whose sum in id order is kept.
func (s *Sampler) nucleus(x []float64, lim float64, n int, kept float64) int {
	p := s.p.TopP
	if s.hist == nil {
		s.hist = make([]float64, nucleusBuckets)
	}
	hist := s.hist
	clear(hist)
	top := int(math.Float64bits(1) >> nucleusShift)
	for _, e := range x {
		if e > 0 && e >= lim {
			b := top - int(math.Float64bits(e)>>nucleusShift)
			hist[min(max(b, 0), nucleusBuckets-1)] += e
		}
	}
	// Relative bound between this code's cumulative values and the plain algorithm's, with a
	// factor of 4 to spare: each is within (n + prefix length + 2) half-ulps of the true value.
	m := float64(8*(n+64)) * 0x1p-53
	need := p * kept * (1 + 4*m)
	var acc float64
	tau := 0.0 // every candidate
	for b, h := range hist[:nucleusBuckets-1] {
		if acc += h; acc >= need {
			tau = math.Float64frombits(uint64(top-b) << nucleusShift)
			break
		}
	}
	cs := s.collect(x, lim, tau)
	var sum float64
	for j, c := range cs {
		sum += c.v
		cum := sum / kept
		if cum*(1+m) >= p {
			if cum*(1-m) < p {
				break // too close to call
			}
			return s.drawFrom(cs[:j+1], false)
		}
	}
	return s.drawFrom(s.collect(x, lim, 0), true)
}
