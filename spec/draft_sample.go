// This file draws a draft model's tokens: greedy when the request's temperature is 0 (a point
// mass: Probs nil), otherwise from the draft's distribution under the request's temperature,
// top-k, top-p, min-p and logit bias (sample.Sampler.Distribution), drawn with a per-sequence
// RNG seeded from the request's seed, with Probs the distribution each draft came from.

package spec

import (
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/sample"
)

// draftSeedMix makes the draft's RNG stream differ from the target sampler's of the same seed:
// rejection sampling needs the draft's draws independent of the verifier's.
const draftSeedMix = 0xd1b54a32d192ed03

// greedy reports whether r's drafts are chosen greedily.
func greedy(r *engine.ProposeRequest) bool { return r.Params == nil || r.Params.Temperature == 0 }

// choose drafts the next token of a from the draft's logits row, appending its distribution to
// a.req.Probs when the request samples.
func (d *Draft) choose(a *active, logits []float32) int {
	if greedy(a.req) {
		return argmax(logits)
	}
	s := a.s
	if s.smp == nil {
		p := a.req.Params
		smp, err := sample.New(sample.Params{Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP,
			MinP: p.MinP, LogitBias: p.LogitBias, Seed: p.Seed ^ draftSeedMix})
		if err != nil {
			return d.pointMass(a, argmax(logits))
		}
		s.smp = smp
	}
	j := len(a.req.Probs)
	for len(s.probs) <= j {
		s.probs = append(s.probs, nil)
	}
	q, err := s.smp.Distribution(s.probs[j], logits)
	if err != nil {
		return d.pointMass(a, argmax(logits))
	}
	s.probs[j] = q
	tok := s.smp.DrawFrom(q)
	if tok < 0 {
		return d.pointMass(a, argmax(logits))
	}
	a.req.Probs = append(a.req.Probs, q)
	return tok
}

// pointMass appends a distribution with all its mass on tok (a deterministic draft among
// sampled ones) and returns tok.
func (d *Draft) pointMass(a *active, tok int) int {
	s, j := a.s, len(a.req.Probs)
	for len(s.probs) <= j {
		s.probs = append(s.probs, nil)
	}
	q := s.probs[j]
	if cap(q) < d.m.Config.Vocab {
		q = make([]float32, d.m.Config.Vocab)
	}
	q = q[:d.m.Config.Vocab]
	clear(q)
	q[tok] = 1
	s.probs[j] = q
	a.req.Probs = append(a.req.Probs, q)
	return tok
}

// argmax is the index of the largest value (ties to the lowest id, as package sample does):
// the vector maximum (kernels.Max) of each chunk of 256 values, then the first index holding
// the largest in the first chunk that has it; 4096 logits in about a fifth of argmaxRef's
// ~3 us. Logits with a NaN may draft another token than argmaxRef would (a draft only costs
// speed, never changes what the target accepts); without NaN both agree.
func argmax(x []float32) int {
	const chunk = 256
	best, bestMax := 0, float32(0)
	for c := 0; c < len(x); c += chunk {
		m := kernels.Max(x[c:min(c+chunk, len(x))])
		if m != m {
			return argmaxRef(x)
		}
		if c == 0 || m > bestMax {
			best, bestMax = c, m
		}
	}
	for i, v := range x[best:min(best+chunk, len(x))] {
		if v == bestMax {
			return best + i
		}
	}
	return argmaxRef(x)
}

// argmaxRef is the plain argmax.
func argmaxRef(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
