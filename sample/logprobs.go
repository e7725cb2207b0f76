// Log-probabilities of the raw distribution: the chosen token's and the n most likely, found by
// a bounded selection instead of sorting the vocabulary (the same list a stable sort gives).
package sample

import (
	"math"
	"sort"
)

// logprobs returns the raw log-softmax value of id and the top n entries (most likely first,
// ties by lower id).
func logprobs(logits []float32, id, n int) (float64, []TokenLogprob) {
	mx := math.Inf(-1)
	nan := false
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
		nan = nan || v != v
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	var top []TokenLogprob
	switch {
	case n <= 0:
	case nan: // NaN compares false with everything: keep the stable sort's exact behavior
		idx := make([]int, len(logits))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
		for _, i := range idx[:min(n, len(idx))] {
			top = append(top, TokenLogprob{ID: i, Logprob: float64(logits[i]) - lse})
		}
	default:
		best := make([]int, 0, min(n, len(logits))+1)
		for i, v := range logits {
			if len(best) == n {
				if v <= logits[best[n-1]] { // equal: the kept one has the lower id
					continue
				}
				best = best[:n-1]
			}
			j := len(best)
			best = append(best, 0)
			for j > 0 && logits[best[j-1]] < v {
				best[j] = best[j-1]
				j--
			}
			best[j] = i
		}
		top = make([]TokenLogprob, len(best))
		for k, i := range best {
			top[k] = TokenLogprob{ID: i, Logprob: float64(logits[i]) - lse}
		}
	}
	return float64(logits[id]) - lse, top
}
