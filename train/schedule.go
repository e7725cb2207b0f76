// This file implements the learning-rate schedule: linear warmup from LR/Warmup to LR over
// the first Warmup steps, then cosine decay to MinLR at the last step (as llm.c and nanoGPT).
package train

import "math"

// LRAt is the learning rate of step (0-based) in a run of c.Steps steps.
func (c *Config) LRAt(step int) float64 {
	if step < c.Warmup {
		return c.LR * float64(step+1) / float64(c.Warmup)
	}
	decaySteps := c.Steps - c.Warmup
	if decaySteps <= 1 {
		return c.LR
	}
	frac := float64(step-c.Warmup) / float64(decaySteps-1)
	frac = min(max(frac, 0), 1)
	coeff := 0.5 * (1 + math.Cos(math.Pi*frac)) // 1 -> 0
	return c.MinLR + coeff*(c.LR-c.MinLR)
}
