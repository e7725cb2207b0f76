// Package sample chooses the next token from a row of logits: greedy, or seeded random
// sampling with temperature, top-k, top-p and min-p, after logit bias and repetition,
// presence and frequency penalties; it can report log-probabilities.
//
// Order of operations (following vLLM's sampler):
//
//  1. logit bias: logits[id] += bias[id]
//  2. repetition penalty over every token seen (prompt and generated): a positive logit is
//     divided by the penalty, a negative one multiplied
//  3. frequency and presence penalties over generated tokens only (OpenAI):
//     logits[id] -= count[id]*frequency + (count[id] > 0 ? presence : 0)
//  4. temperature 0: greedy argmax (ties go to the lowest id), steps 5-8 are skipped
//  5. divide by temperature
//  6. min-p: drop tokens whose probability is below MinP times the largest probability
//  7. top-k: keep the K most likely tokens (ties broken by lower id)
//  8. top-p: keep the smallest most-likely-first prefix whose probability reaches TopP
//     (renormalized after the steps above); then draw from what is left with the seeded RNG
//
// SampleMasked first sets every token outside an allowed set (a bitmask, as a grammar gives it)
// to -inf after step 3, so greedy choice, min-p, top-k, top-p and the draw all see only allowed
// tokens; the chosen token is always allowed.
//
// For speculative decoding, Distribution gives the distribution the steps above draw from (a
// draft model's q), and Verify checks draft tokens against the target's logits: greedy
// matching at temperature 0, rejection sampling otherwise, so the tokens are distributed as
// Sample's.
//
// Log-probabilities are those of the raw model distribution (log-softmax of the logits
// given to Sample, before any of the steps above and before a mask), as vLLM reports by default.
//
// The steps above are what the sampler computes; the code takes shortcuts (no sort of the
// vocabulary, approximate exponentials where a margin makes them decide, the allowed tokens
// alone under a sparse mask) that give the very same tokens and log-probabilities as the plain
// algorithm, which reference_test.go keeps and compares against.
package sample

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Params configures a Sampler. The zero value is greedy decoding with no penalties.
type Params struct {
	Temperature       float64         // 0 = greedy
	TopK              int             // 0 = no top-k
	TopP              float64         // 0 or 1 = no top-p
	MinP              float64         // 0 = no min-p
	RepetitionPenalty float64         // 0 or 1 = none; > 1 discourages repeats
	PresencePenalty   float64         // subtracted once from every generated token's logit
	FrequencyPenalty  float64         // subtracted per occurrence of a generated token
	LogitBias         map[int]float64 // added to the given token ids' logits
	Seed              uint64          // RNG seed: same seed, same logits -> same choices
	TopLogprobs       int             // number of most likely tokens to report (0 = none)
	Logprobs          bool            // report the chosen token's log-probability
}

// TokenLogprob is one token with its log-probability.
type TokenLogprob struct {
	ID      int
	Logprob float64
}

// Result is one sampling decision.
type Result struct {
	ID      int
	Logprob float64        // log-probability of ID (raw distribution) when Params.Logprobs or TopLogprobs
	Top     []TokenLogprob // the TopLogprobs most likely tokens, most likely first
}

// Sampler holds the parameters, the RNG and the token history for one sequence.
type Sampler struct {
	p         Params
	rng       *rand.Rand
	seen      map[int]bool // prompt + generated
	generated map[int]int  // counts of generated tokens
	buf       []float64
	idx       []int     // reused by the reference implementation in tests
	cands     []cand    // candidate tokens of a draw (reused)
	vals      []float64 // the largest logits under top-k (reused)
	sparseX   []float64 // the allowed tokens' logits under a sparse mask (reused)
	sparseIDs []int     // their ids
	hist      []float64 // probability mass per bucket for the top-p threshold (reused)
	count     []int     // candidates per bucket
	pbuf      []float64 // probabilities of a draw (reused)
	gathered  []cand    // nucleus candidates in id order (reused)
	dbuf      []float64 // a distribution for speculative decoding (reused)

	// Tests set these to the original implementations to compare the fast paths with them.
	refDraw     func(s *Sampler, x []float64) int
	refLogprobs func(logits []float32, id, n int) (float64, []TokenLogprob)
}

// New validates p and returns a Sampler.
func New(p Params) (*Sampler, error) {
	switch {
	case p.Temperature < 0 || math.IsNaN(p.Temperature):
		return nil, fmt.Errorf("sample: temperature %v must be >= 0", p.Temperature)
	case p.TopK < 0:
		return nil, fmt.Errorf("sample: top_k %d must be >= 0", p.TopK)
	case p.TopP < 0 || p.TopP > 1:
		return nil, fmt.Errorf("sample: top_p %v must be in [0, 1]", p.TopP)
	case p.MinP < 0 || p.MinP > 1:
		return nil, fmt.Errorf("sample: min_p %v must be in [0, 1]", p.MinP)
	case p.RepetitionPenalty < 0:
		return nil, fmt.Errorf("sample: repetition penalty %v must be > 0", p.RepetitionPenalty)
	case p.TopLogprobs < 0:
		return nil, fmt.Errorf("sample: top logprobs %d must be >= 0", p.TopLogprobs)
	}
	return &Sampler{
		p:         p,
		rng:       rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)),
		seen:      map[int]bool{},
		generated: map[int]int{},
	}, nil
}

// SetPrompt records prompt tokens for the repetition penalty (not for presence/frequency).
func (s *Sampler) SetPrompt(ids []int) {
	if !s.repetition() {
		return // nothing reads it
	}
	for _, id := range ids {
		s.seen[id] = true
	}
}

// Accept records a generated token. Sample calls it for the token it returns; call it for
// tokens chosen by other means (e.g. forced).
func (s *Sampler) Accept(id int) {
	if s.repetition() {
		s.seen[id] = true
	}
	if s.p.PresencePenalty != 0 || s.p.FrequencyPenalty != 0 {
		s.generated[id]++
	}
}

// repetition reports whether a repetition penalty applies.
func (s *Sampler) repetition() bool {
	rp := s.p.RepetitionPenalty
	return rp > 0 && rp != 1
}

// Sample chooses a token from logits ([vocab]; not modified) and records it as generated.
func (s *Sampler) Sample(logits []float32) (Result, error) { return s.SampleMasked(logits, nil) }

// SampleMasked is Sample restricted to the tokens whose bit is set in mask (token i is bit
// i%64 of mask[i/64]; tokens past len(mask)*64 are not allowed). A nil mask allows every
// token (Sample). It is an error when mask allows no token of logits.
func (s *Sampler) SampleMasked(logits []float32, mask []uint64) (Result, error) {
	n := len(logits)
	if n == 0 {
		return Result{}, fmt.Errorf("sample: empty logits")
	}
	for id := range s.p.LogitBias {
		if id < 0 || id >= n {
			return Result{}, fmt.Errorf("sample: logit bias for token %d outside vocabulary of %d", id, n)
		}
	}
	x := s.processed(logits)
	var id int
	switch {
	case mask != nil && s.p.Temperature == 0:
		// Greedy visits the allowed tokens only (the same choice as argmax after applyMask).
		if id = maskedArgmax(x, mask); id < 0 {
			return Result{}, fmt.Errorf("sample: the mask allows none of the %d tokens", n)
		}
	case mask != nil:
		var ok bool
		if id, ok = s.drawSparse(x, mask); !ok {
			if !applyMask(x, mask) {
				return Result{}, fmt.Errorf("sample: the mask allows none of the %d tokens", n)
			}
			id = s.draw(x)
		}
	case s.p.Temperature == 0:
		id = argmax(x)
	default:
		id = s.draw(x)
	}
	if mask != nil && !allowed(mask, id) {
		// Every allowed token's logit is -inf or NaN (a logit bias of -inf, a broken model):
		// the choice above saw no finite candidate. Take the first allowed token instead.
		id = firstAllowed(mask)
	}
	res := Result{ID: id}
	if s.p.Logprobs || s.p.TopLogprobs > 0 {
		if s.refLogprobs != nil {
			res.Logprob, res.Top = s.refLogprobs(logits, id, s.p.TopLogprobs)
		} else {
			res.Logprob, res.Top = logprobs(logits, id, s.p.TopLogprobs)
		}
	}
	s.Accept(id)
	return res, nil
}

// processed applies steps 1-3 and returns float64 logits (a reused buffer).
func (s *Sampler) processed(logits []float32) []float64 {
	if cap(s.buf) < len(logits) {
		s.buf = make([]float64, len(logits))
	}
	x := s.buf[:len(logits)]
	for i, v := range logits {
		x[i] = float64(v)
	}
	for id, b := range s.p.LogitBias {
		x[id] += b
	}
	if s.repetition() {
		rp := s.p.RepetitionPenalty
		for id := range s.seen {
			if id < 0 || id >= len(x) {
				continue
			}
			if x[id] > 0 {
				x[id] /= rp
			} else {
				x[id] *= rp
			}
		}
	}
	if s.p.PresencePenalty != 0 || s.p.FrequencyPenalty != 0 {
		for id, c := range s.generated {
			if id >= 0 && id < len(x) {
				x[id] -= float64(c)*s.p.FrequencyPenalty + s.p.PresencePenalty
			}
		}
	}
	return x
}

// applyMask sets x[i] to -inf for every token i not allowed by mask and reports whether any
// token of x is allowed.
func applyMask(x []float64, mask []uint64) bool {
	ninf := math.Inf(-1)
	found := false
	for w := 0; w*64 < len(x); w++ {
		var word uint64
		if w < len(mask) {
			word = mask[w]
		}
		row := x[w*64 : min(w*64+64, len(x))]
		full := uint64(1)<<len(row) - 1 // all ones when len(row) == 64
		word &= full
		found = found || word != 0
		if word == full {
			continue
		}
		if word == 0 {
			for i := range row {
				row[i] = ninf
			}
			continue
		}
		for off := ^word & full; off != 0; off &= off - 1 { // the disallowed tokens only
			row[bits.TrailingZeros64(off)] = ninf
		}
	}
	return found
}

// maskedArgmax is argmax over the tokens of x that mask allows (-1 if none): the lowest id on
// ties; NaN never wins; when every allowed value is -inf, the lowest allowed id. When the mask
// allows most tokens, the unmasked argmax is usually allowed, and then it is the answer.
func maskedArgmax(x []float64, mask []uint64) int {
	words := mask[:min(len(mask), (len(x)+63)/64)]
	count := 0
	for _, word := range words {
		count += bits.OnesCount64(word)
	}
	if 2*count > len(x) {
		if id := argmax(x); allowed(mask, id) && !math.IsNaN(x[id]) {
			return id
		}
	}
	best := -1
	for w, word := range words {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if i >= len(x) {
				break
			}
			if best < 0 || x[i] > x[best] || math.IsNaN(x[best]) {
				best = i
			}
		}
	}
	return best
}

// allowed reports whether mask allows token id.
func allowed(mask []uint64, id int) bool {
	return id/64 < len(mask) && mask[id/64]>>(id%64)&1 != 0
}

// firstAllowed returns the lowest token id that mask allows (applyMask found one below n).
func firstAllowed(mask []uint64) int {
	for w, word := range mask {
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return 0
}

// argmax returns the index of the largest value, the lowest index on ties; NaN never wins.
func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] || math.IsNaN(x[best]) {
			best = i
		}
	}
	return best
}
