package tune

import "math"

// adam is Adam (Kingma and Ba) without weight decay over a vector of scalars held elsewhere.
type adam struct {
	lr   float64
	m, v []float64
	t    int
}

func newAdam(n int, lr float64) *adam {
	return &adam{lr: lr, m: make([]float64, n), v: make([]float64, n)}
}

// step moves every *theta[i] against g[i].
func (a *adam) step(theta []*float32, g []float32) {
	const b1, b2, eps = 0.9, 0.999, 1e-12
	a.t++
	c1, c2 := 1-math.Pow(b1, float64(a.t)), 1-math.Pow(b2, float64(a.t))
	for i, p := range theta {
		gi := float64(g[i])
		a.m[i] = b1*a.m[i] + (1-b1)*gi
		a.v[i] = b2*a.v[i] + (1-b2)*gi*gi
		*p -= float32(a.lr * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + eps))
	}
}
