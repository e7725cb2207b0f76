// The original sampler steps, kept verbatim as the reference the fast paths must match
// exactly (same ids, same RNG use, same logprobs).
package sample

import (
	"math"
	"slices"
	"sort"
)

// drawReference is the original draw (full sort for top-p): it applies steps 5-8 to x and samples an id.
func (s *Sampler) drawReference(x []float64) int {
	idx, kept := s.keptReference(x)
	if len(idx) == 0 {
		return argmax(x)
	}
	u := s.rng.Float64() * kept
	for _, i := range idx {
		u -= x[i]
		if u < 0 {
			return i
		}
	}
	return idx[len(idx)-1]
}

// keptReference applies steps 5-8 to x, leaving the unnormalized probabilities in x, and
// returns the tokens the draw walks (in its order) and their sum; none means argmax(x).
func (s *Sampler) keptReference(x []float64) ([]int, float64) {
	t := s.p.Temperature
	mx := math.Inf(-1)
	for i := range x {
		x[i] /= t
		mx = math.Max(mx, x[i])
	}
	// Probabilities (unnormalized; normalization happens on the kept set).
	var sum float64
	for i := range x {
		x[i] = math.Exp(x[i] - mx)
		sum += x[i]
	}
	// Candidates: every id with a non-zero probability, and under min-p only those within
	// MinP of the most likely (whose unnormalized probability is exp(0) = 1).
	lim := 0.0
	if s.p.MinP > 0 {
		lim = s.p.MinP
	}
	idx := s.idx[:0]
	for i := range x {
		if x[i] > 0 && x[i] >= lim {
			idx = append(idx, i)
		}
	}
	s.idx = idx
	if len(idx) == 0 {
		return nil, 0
	}
	// Most likely first (ties: lower id first) only where a cut needs the order: top-k keeps a
	// prefix (found by partial selection), top-p a cumulative prefix. Without either, the draw
	// walks the candidates in id order, which samples the same distribution with no sort.
	desc := func(a, b int) int {
		if x[a] != x[b] {
			if x[a] > x[b] {
				return -1
			}
			return 1
		}
		return a - b
	}
	if s.p.TopK > 0 && s.p.TopK < len(idx) {
		idx = topKReference(idx, s.p.TopK, desc)
	} else if s.p.TopP > 0 && s.p.TopP < 1 {
		slices.SortFunc(idx, desc)
	}
	kept := 0.0
	for _, i := range idx {
		kept += x[i]
	}
	if s.p.TopP > 0 && s.p.TopP < 1 {
		var cum float64
		k := 0
		for k < len(idx) {
			cum += x[idx[k]] / kept
			k++
			if cum >= s.p.TopP {
				break
			}
		}
		idx = idx[:k]
		kept = 0
		for _, i := range idx {
			kept += x[i]
		}
	}
	return idx, kept
}

// topKReference returns the k first elements of idx under cmp, in that order, reordering idx in place:
// a selection of the k best in one pass with a bounded insertion (k is small next to a
// vocabulary), then they are already sorted.
func topKReference(idx []int, k int, cmp func(a, b int) int) []int {
	best := make([]int, 0, k+1)
	for _, id := range idx {
		if len(best) == k && cmp(id, best[k-1]) >= 0 {
			continue
		}
		pos, _ := slices.BinarySearchFunc(best, id, cmp)
		best = slices.Insert(best, pos, id)
		if len(best) > k {
			best = best[:k]
		}
	}
	return append(idx[:0], best...)
}

// logprobsReference (the original logprobs) returns the raw log-softmax value of id and the top n entries.
func logprobsReference(logits []float32, id, n int) (float64, []TokenLogprob) {
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	var top []TokenLogprob
	if n > 0 {
		idx := make([]int, len(logits))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
		for _, i := range idx[:min(n, len(idx))] {
			top = append(top, TokenLogprob{ID: i, Logprob: float64(logits[i]) - lse})
		}
	}
	return float64(logits[id]) - lse, top
}
