// expApprox against math.Exp: its relative error stays far below expErr.
package sample

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestExpApprox(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	for i := range 2_000_000 {
		var x float64
		switch i % 3 {
		case 0:
			x = -r.Float64() * 700
		case 1:
			x = -r.Float64() * 30
		default:
			x = -math.Float64frombits(r.Uint64() >> 2) // any magnitude below 2
		}
		want := math.Exp(x)
		worst = max(worst, math.Abs(expApprox(x)/want-1))
	}
	for _, x := range []float64{0, -700, -0.5 * math.Ln2, -1e-300} {
		worst = max(worst, math.Abs(expApprox(x)/math.Exp(x)-1))
	}
	t.Logf("largest relative error %.3g (bound %g)", worst, expErr)
	if worst > expErr/10 {
		t.Fatalf("relative error %g, too close to the bound %g", worst, expErr)
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = -float64(i) / 200
	}
	var sink float64
	b.Run("math", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sink += math.Exp(x)
			}
		}
	})
	b.Run("approx", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sink += expApprox(x)
			}
		}
	})
	_ = sink
}
