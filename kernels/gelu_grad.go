// This file implements training's GELU backward (tanh approximation, gelu.go):
// gelu'(x) = 0.5·(1 + th) + 0.5·x·(1 − th²)·sqrt(2/π)·(1 + 3·0.044715·x²), th = tanh(sqrt(2/π)·(x + 0.044715·x³)),
// in float64 per element as Gelu is.
package kernels

import "math"

// GeluPrime returns gelu'(x).
func GeluPrime(x float32) float32 {
	v := float64(x)
	th := math.Tanh(geluC * (v + 0.044715*v*v*v))
	return float32(0.5*(1+th) + 0.5*v*(1-th*th)*geluC*(1+3*0.044715*v*v))
}

// GeluGrad sets dx[i] = dy[i]·gelu'(x[i]); dx may alias dy.
func GeluGrad(dx, dy, x []float32) {
	for i, v := range x[:len(dx)] {
		dx[i] = dy[i] * GeluPrime(v)
	}
}
