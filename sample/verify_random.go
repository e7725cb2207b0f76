// Rejection sampling of draft tokens (speculative sampling: Leviathan et al. 2023, "Fast
// Inference from Transformers via Speculative Decoding"; Chen et al. 2023, "Accelerating Large
// Language Model Decoding with Speculative Sampling"). With p the target's distribution at a
// position (after the sampler's transforms) and q the one the draft token d was drawn from,
// keeping d with probability min(1, p(d)/q(d)) and otherwise drawing from the residual
// max(0, p-q) (renormalized) yields a token distributed exactly as p.
package sample

import (
	"fmt"
	"math"
)

// verifyRandom is Verify at temperature > 0 (inputs checked). For each draft i in turn, p_i is
// Distribution of row i with the history so far (the accepted drafts included, so penalties see
// them) and q_i is q[i] normalized, or a point mass at drafts[i] when q is nil. drafts[i] is
// accepted when u*q_i(d) < p_i(d) for u uniform in [0, 1) from the sampler's RNG; else the
// token comes from max(0, p_i - q_i) (for a point mass: p_i without d) and verification stops.
// After every draft is accepted the bonus token is drawn from row k by Sample.
func (s *Sampler) verifyRandom(logits []float32, vocab int, drafts []int, q [][]float32) ([]Result, error) {
	if err := s.checkRow(vocab); err != nil {
		return nil, err
	}
	qsum := make([]float64, len(q))
	for i, qi := range q {
		for _, v := range qi {
			if v > 0 {
				qsum[i] += float64(v)
			} else if v != 0 { // negative or NaN
				return nil, fmt.Errorf("sample: verify: draft distribution %d has the entry %v", i, v)
			}
		}
		if !(qsum[i] > 0) || math.IsInf(qsum[i], 0) {
			return nil, fmt.Errorf("sample: verify: draft distribution %d sums to %v", i, qsum[i])
		}
	}
	out := make([]Result, 0, len(drafts)+1)
	for i, d := range drafts {
		row := logits[i*vocab : (i+1)*vocab]
		p := s.dist(s.processed(row))
		qd := 1.0
		if q != nil {
			qd = float64(q[i][d]) / qsum[i]
		}
		// u*qd < p(d): probability min(1, p(d)/qd); with qd = 0 (a draft q gave no chance)
		// the draft is kept whenever the target allows it.
		if u := s.rng.Float64(); u*qd < p[d] {
			out = append(out, s.verified(row, d))
			continue
		}
		var id int
		if q == nil {
			id = s.drawResidual(p, nil, 0, d)
		} else {
			id = s.drawResidual(p, q[i], qsum[i], d)
		}
		return append(out, s.verified(row, id)), nil
	}
	r, err := s.Sample(logits[len(drafts)*vocab:])
	if err != nil {
		return out, err
	}
	return append(out, r), nil
}

// verified records id (chosen from row) as generated and returns its Result, with
// log-probabilities as Sample gives them.
func (s *Sampler) verified(row []float32, id int) Result {
	res := Result{ID: id}
	if s.p.Logprobs || s.p.TopLogprobs > 0 {
		if s.refLogprobs != nil {
			res.Logprob, res.Top = s.refLogprobs(row, id, s.p.TopLogprobs)
		} else {
			res.Logprob, res.Top = logprobs(row, id, s.p.TopLogprobs)
		}
	}
	s.Accept(id)
	return res
}

// drawResidual draws from max(0, p - q/qsum) renormalized, where q == nil is the point mass at
// d. When rounding leaves the residual empty (p and q equal: a rejection then has probability
// 0 in exact arithmetic) it draws from p.
func (s *Sampler) drawResidual(p []float64, q []float32, qsum float64, d int) int {
	res := func(i int) float64 {
		switch {
		case q != nil:
			return max(0, p[i]-float64(q[i])/qsum)
		case i == d:
			return 0
		}
		return p[i]
	}
	var sum float64
	last := -1
	for i := range p {
		if r := res(i); r > 0 {
			sum += r
			last = i
		}
	}
	if last < 0 {
		res = func(i int) float64 { return p[i] }
		for i, v := range p {
			if v > 0 {
				sum += v
				last = i
			}
		}
	}
	u := s.rng.Float64() * sum
	for i := range p[:last+1] {
		if r := res(i); r > 0 {
			if u -= r; u < 0 {
				return i
			}
		}
	}
	return last
}
