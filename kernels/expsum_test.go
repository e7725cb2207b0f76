// This file checks Max and ExpSub against their plain references on every length 1..70 (all
// tails of the 8-wide AVX2 loops) and a long row, with -Inf and very negative entries.
package kernels

import (
	"math"
	"math/rand"
	"testing"
)

func TestMaxExpSub(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, n := range append(seq(1, 70), 1000, 4099) {
		x := randVec(r, n, 8)
		if n > 3 {
			x[1], x[2] = float32(math.Inf(-1)), -200
		}
		if got, want := Max(x), maxRef(x); got != want {
			t.Fatalf("Max n=%d: %v, want %v", n, got, want)
		}
		mx := maxRef(x) + 0.5 // a maximum from elsewhere (another rank's row part)
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		sg, sw := ExpSub(got, mx), expSubRef(want, mx)
		if math.Abs(sg-sw) > 1e-6*sw {
			t.Fatalf("ExpSub n=%d: sum %v, want %v", n, sg, sw)
		}
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > 1e-6*float64(want[i])+1e-12 {
				t.Fatalf("ExpSub n=%d [%d] = %v, want %v", n, i, got[i], want[i])
			}
		}
	}
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}
