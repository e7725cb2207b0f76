package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLowRankKernels: LowRankDots matches Dot (1e-5 relative) and gives the same bits over
// groups of 4 rows as over all rows; LowRankAxpys gives the bits of Axpy calls in order, also
// over column pieces starting at multiples of 8; on the assembly and the pure-Go paths.
func TestLowRankKernels(t *testing.T) {
	for _, ref := range []bool{false, true} {
		old := Reference
		Reference = ref
		rng := rand.New(rand.NewPCG(1, 2))
		for _, k := range []int{3, 8, 40, 256, 257} {
			for _, r := range []int{1, 3, 4, 8, 13, 16} {
				w := make([]float32, r*k)
				x := make([]float32, k)
				for i := range w {
					w[i] = float32(rng.NormFloat64())
				}
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				all := make([]float32, r)
				LowRankDots(all, w, x, k)
				for j := range all {
					want := Dot(x, w[j*k:(j+1)*k])
					if d := math.Abs(float64(all[j] - want)); d > 1e-5*math.Sqrt(float64(k))*4 {
						t.Fatalf("ref %v k %d r %d: dot %d = %g, Dot %g", ref, k, r, j, all[j], want)
					}
				}
				for j0 := 0; j0 < r; j0 += 4 {
					part := make([]float32, min(4, r-j0))
					LowRankDots(part, w[j0*k:], x, k)
					for j := range part {
						if part[j] != all[j0+j] {
							t.Fatalf("ref %v k %d r %d: rows from %d differ at %d", ref, k, r, j0, j)
						}
					}
				}
				// Axpys: y [k] += Σ_j p[j]·w[j*k:]
				p := x[:min(r, k)]
				y := make([]float32, k)
				for i := range y {
					y[i] = float32(rng.NormFloat64())
				}
				want := append([]float32(nil), y...)
				for j, a := range p {
					Axpy(want, a, w[j*k:])
				}
				got := append([]float32(nil), y...)
				LowRankAxpys(got, p, w, k)
				pieces := append([]float32(nil), y...)
				for c := 0; c < k; c += 16 {
					LowRankAxpys(pieces[c:min(c+16, k)], p, w[c:], k)
				}
				for i := range want {
					if got[i] != want[i] || pieces[i] != want[i] {
						t.Fatalf("ref %v k %d r %d: axpys col %d: %g, pieces %g, Axpy %g", ref, k, r, i, got[i], pieces[i], want[i])
					}
				}
			}
		}
		Reference = old
	}
}
