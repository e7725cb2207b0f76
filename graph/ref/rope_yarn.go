// This file holds the reference of YaRN RoPE scaling (the yarn_* attributes of mla_attention):
// the rotation angles pos·f_i with f_i blended, in float64, between the original inverse
// frequency base^(-2i/d) and its interpolation base^(-2i/d)/s by a linear ramp over the pairs
// from the correction dim of beta_fast to that of beta_slow, and cos, sin times mscale·(1 +
// 0.1·ln s): the YaRN paper's reference code (ext_factor 1), not the kernel's float32 loop.
package ref

import (
	"math"

	"github.com/llmcloud/llmcloud/graph"
)

// yarnTables returns per row [cos, sin] interleaved for head_dim rotated dims, or nil when
// the attributes have no yarn_factor.
func yarnTables(pos []int32, a graph.Attrs) [][]float32 {
	if _, ok := a["yarn_factor"]; !ok {
		return nil
	}
	d, base := int(a.Int("head_dim", 0)), a.Float("theta", 0)
	s, orig := a.Float("yarn_factor", 1), float64(a.Int("yarn_orig_ctx", 0))
	corr := func(beta float64) float64 {
		return float64(d) * math.Log(orig/(beta*2*math.Pi)) / (2 * math.Log(base))
	}
	low := math.Max(0, math.Floor(corr(a.Float("yarn_beta_fast", 32))))
	high := math.Min(float64(d-1), math.Ceil(corr(a.Float("yarn_beta_slow", 1))))
	if high == low {
		high += 0.001
	}
	m := a.Float("mscale", 1) * (1 + 0.1*math.Log(s))
	freq := make([]float64, d/2)
	for i := range freq {
		orig := math.Pow(base, -float64(2*i)/float64(d))
		interp := math.Min(1, math.Max(0, (float64(i)-low)/(high-low)))
		freq[i] = orig/s*interp + orig*(1-interp)
	}
	out := make([][]float32, len(pos))
	for r, p := range pos {
		out[r] = make([]float32, d)
		for i, f := range freq {
			sn, c := math.Sincos(float64(p) * f)
			out[r][2*i], out[r][2*i+1] = float32(c*m), float32(sn*m)
		}
	}
	return out
}
