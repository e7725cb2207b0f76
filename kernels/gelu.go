// This file implements GELU in its tanh approximation and GeGLU (Gemma's feed-forward gate):
// gelu(x) = 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))), computed element by element with
// the tanh in float64, so an element's value never depends on its neighbours.
package kernels

import "math"

const geluC = 0.7978845608028654 // sqrt(2/π)

// Gelu returns gelu(x).
func Gelu(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * (1 + math.Tanh(geluC*(v+0.044715*v*v*v))))
}

// GeGLU sets out[i] = gelu(g[i]) * u[i] (u nil: gelu(g[i])); out may alias g or u.
func GeGLU(out, g, u []float32) {
	if u == nil {
		for i, x := range g[:len(out)] {
			out[i] = Gelu(x)
		}
		return
	}
	for i, x := range g[:len(out)] {
		out[i] = Gelu(x) * u[i]
	}
}
