// Drawing under a sparse mask: the allowed tokens' logits are gathered (in id order) and the draw
// runs on them alone, instead of setting every other token to -inf and visiting the whole
// vocabulary. Candidates keep their relative order, so sums, ties and cuts are the same.
package sample

import (
	"math"
	"math/bits"
)

// drawSparse draws from the tokens mask allows when they are at most a quarter of x and their
// largest logit is finite with no NaN (the cases the -inf path treats specially are left to it).
// It reports false, having changed nothing and drawn no random number, when it does not apply.
func (s *Sampler) drawSparse(x []float64, mask []uint64) (int, bool) {
	if s.refDraw != nil {
		return 0, false
	}
	words := mask[:min(len(mask), (len(x)+63)/64)]
	count := 0
	for _, w := range words {
		count += bits.OnesCount64(w)
	}
	if count == 0 || 4*count > len(x) {
		return 0, false
	}
	xs, ids := s.sparseX[:0], s.sparseIDs[:0]
	mx := math.Inf(-1)
	for w, word := range words {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if i >= len(x) {
				break
			}
			v := x[i]
			if v != v {
				return 0, false
			}
			mx = max(mx, v)
			xs, ids = append(xs, v), append(ids, i)
		}
	}
	s.sparseX, s.sparseIDs = xs, ids
	if len(xs) == 0 || math.IsInf(mx, 0) {
		return 0, false
	}
	return ids[s.draw(xs)], true
}
