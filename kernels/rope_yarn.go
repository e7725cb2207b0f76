// This file adds YaRN scaling to Rope as ggml's rope applies it (ext_factor 1, which llama.cpp
// sets for rope scaling type yarn): per frequency pair i, the angle blends the interpolated
// angle θ/s with the original θ by a ramp over the pairs between the correction dims that
// beta_fast and beta_slow give for the original context, and cos and sin are multiplied by
// 1 + 0.1·ln s (on top of Mscale).
package kernels

import (
	"fmt"
	"math"
)

// Yarn holds YaRN's parameters (GGUF rope.scaling.*, config.json rope_scaling of type yarn).
type Yarn struct {
	Factor   float64 // s, the context extension (rope.scaling.factor; ggml's freq_scale is 1/s)
	OrigCtx  int     // the original context (rope.scaling.original_context_length)
	BetaFast float64 // 0: 32, ggml's default
	BetaSlow float64 // 0: 1
}

// Betas returns the ramp's betas with their defaults filled in.
func (y Yarn) Betas() (fast, slow float64) {
	fast, slow = y.BetaFast, y.BetaSlow
	if fast == 0 {
		fast = 32
	}
	if slow == 0 {
		slow = 1
	}
	return fast, slow
}

// YarnCorrDims returns ggml's correction dims [low, high] for dims rotated dimensions: the
// pair index at which a frequency turns beta_fast resp. beta_slow times over the original
// context, floored resp. ceiled, clamped to [0, dims-1]. Computed in float32 as ggml does.
func YarnCorrDims(dims int, base float64, y Yarn) (low, high float32) {
	fast, slow := y.Betas()
	corr := func(beta float64) float32 {
		return float32(dims) * float32(math.Log(float64(float32(y.OrigCtx)/(float32(beta)*2*float32(math.Pi))))) /
			(2 * float32(math.Log(float64(float32(base)))))
	}
	low = max(0, float32(math.Floor(float64(corr(fast)))))
	high = min(float32(dims-1), float32(math.Ceil(float64(corr(slow)))))
	return low, high
}

// SetYarn turns on YaRN scaling for r; y.Factor must be at least 1 and OrigCtx positive.
func (r *Rope) SetYarn(y Yarn) error {
	fast, slow := y.Betas()
	if !(y.Factor >= 1) || math.IsInf(y.Factor, 0) || y.OrigCtx <= 0 || !(fast > 0) || !(slow > 0) {
		return fmt.Errorf("rope: yarn factor %v (want >= 1), original context %d, betas %v/%v: want positive", y.Factor, y.OrigCtx, fast, slow)
	}
	low, high := YarnCorrDims(r.Dims, r.Base, y)
	r.yarn = make([]float32, r.Dims/2)
	for i := range r.yarn {
		v := (float32(i) - low) / max(0.001, high-low)
		r.yarn[i] = 1 - min(1, max(0, v)) // the weight of the original angle
	}
	r.yarnFS = float32(1 / y.Factor)
	r.yarnM = 1 + 0.1*float32(math.Log(float64(1/r.yarnFS)))
	r.Yarn = &y
	return nil
}
