// This file implements the sampler's half of speculative decoding: Verify takes the target
// model's logits for a token and the k draft tokens after it (k+1 rows) and decides which
// drafts to keep. Greedy (temperature 0) keeps the drafts that equal what Sample would have
// chosen, so the output is token for token the one without speculation; at temperature > 0
// rejection sampling (verify_random.go) keeps the output distribution the target's.

package sample

import "fmt"

// Verify checks drafts against logits, len(drafts)+1 rows of vocab values each: row i is the
// target's next-token logits after the context followed by drafts[:i]. It returns the tokens
// to append, 1 to len(drafts)+1 of them: the accepted drafts, then one token chosen from the
// row after the last accepted one (the target's own choice where a draft was rejected, or a
// bonus token when every draft was accepted). Every returned token is recorded in the
// sampler's history (penalties see it), and carries log-probabilities as Sample's do.
//
// q gives the distributions the drafts were drawn from: nil when each draft token was chosen
// deterministically (n-gram lookup, greedy drafts), else q[i] over the vocabulary for
// drafts[i] (normalized here; Distribution gives it for a draft model sampling with the same
// parameters). At temperature 0 q is not read. At temperature > 0 the drafts are checked by
// rejection sampling (Leviathan et al. 2023, Chen et al. 2023), so the returned tokens are
// distributed exactly as tokens drawn one by one with Sample would be: see verifyRandom.
func (s *Sampler) Verify(logits []float32, vocab int, drafts []int, q [][]float32) ([]Result, error) {
	k := len(drafts)
	if vocab <= 0 || len(logits) != (k+1)*vocab {
		return nil, fmt.Errorf("sample: verify: %d logits for %d drafts of vocabulary %d", len(logits), k, vocab)
	}
	if q != nil && len(q) != k {
		return nil, fmt.Errorf("sample: verify: %d draft distributions for %d drafts", len(q), k)
	}
	for i, d := range drafts {
		if d < 0 || d >= vocab {
			return nil, fmt.Errorf("sample: verify: draft %d is token %d, outside the vocabulary of %d", i, d, vocab)
		}
		if q != nil && len(q[i]) != vocab {
			return nil, fmt.Errorf("sample: verify: draft distribution %d has %d entries, vocabulary %d", i, len(q[i]), vocab)
		}
	}
	if s.p.Temperature != 0 {
		return s.verifyRandom(logits, vocab, drafts, q)
	}
	out := make([]Result, 0, k+1)
	for i := 0; i <= k; i++ {
		r, err := s.Sample(logits[i*vocab : (i+1)*vocab])
		if err != nil {
			return out, err
		}
		out = append(out, r)
		if i == k || r.ID != drafts[i] {
			break
		}
	}
	return out, nil
}
