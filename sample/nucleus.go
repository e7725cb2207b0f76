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

// nucleus draws under top-p (and no top-k cut) from the probabilities x: n candidates
// (probability > 0 and >= lim) whose sum in id order is kept.
func (s *Sampler) nucleus(x []float64, lim float64, n int, kept float64) int {
	p := s.p.TopP
	if s.hist == nil {
		s.hist = make([]float64, nucleusBuckets)
		s.count = make([]int, nucleusBuckets+1)
	}
	hist, count := s.hist, s.count
	clear(hist)
	clear(count)
	for _, e := range x {
		if e > 0 && e >= lim {
			b := bucket(e)
			hist[b] += e
			count[b]++
		}
	}
	// Relative bound between this code's cumulative values and the plain algorithm's, with a
	// factor of 4 to spare: each is within (n + prefix length + 2) half-ulps of the true value.
	m := float64(8*(n+64)) * 0x1p-53
	need := p * kept * (1 + 4*m)
	var acc float64
	last := nucleusBuckets - 1 // the buckets 0..last hold the candidates to sort
	for b, h := range hist {
		if acc += h; acc >= need {
			last = b
			break
		}
	}
	cs := s.bucketSort(x, lim, last)
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

// bucketSort returns the candidates of x in the buckets 0..last, most likely first (ties by
// lower id): placed by bucket in id order (s.count holds the counts), then each bucket sorted.
func (s *Sampler) bucketSort(x []float64, lim float64, last int) []cand {
	count := s.count
	total := 0
	for b := range count[:last+1] { // count[b] becomes the start of bucket b
		c := count[b]
		count[b] = total
		total += c
	}
	count[last+1] = total
	if cap(s.cands) < total {
		s.cands = make([]cand, total)
	}
	cs := s.cands[:total]
	for i, e := range x {
		if e > 0 && e >= lim {
			if b := bucket(e); b <= last {
				cs[count[b]] = cand{e, i}
				count[b]++
			}
		}
	}
	// Now count[b] is the end of bucket b (the start of b+1).
	start := 0
	for b := range last + 1 {
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
