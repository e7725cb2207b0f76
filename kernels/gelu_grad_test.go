package kernels

import (
	"math"
	"testing"
)

// GeluPrime against central differences of Gelu's float64 formula.
func TestGeluPrimeFiniteDifferences(t *testing.T) {
	g := func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(geluC*(x+0.044715*x*x*x))) }
	for x := -6.0; x <= 6; x += 0.37 {
		const h = 1e-5
		want := (g(x+h) - g(x-h)) / (2 * h)
		if got := float64(GeluPrime(float32(x))); math.Abs(got-want) > 1e-6 {
			t.Errorf("gelu'(%v) = %v, finite differences %v", x, got, want)
		}
	}
	dx := make([]float32, 3)
	GeluGrad(dx, []float32{2, -1, 0.5}, []float32{0.3, 1, -2})
	for i, x := range []float32{0.3, 1, -2} {
		if want := []float32{2, -1, 0.5}[i] * GeluPrime(x); dx[i] != want {
			t.Errorf("GeluGrad[%d] = %v, want %v", i, dx[i], want)
		}
	}
}
