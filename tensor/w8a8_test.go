package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQuantizeRowW8A8: per-row scale max|x|/127, values rounded half to even (the ties
// constructed exactly), zero rows, and the dequantized row within half a step.
func TestQuantizeRowW8A8(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 7, 256} {
		src := make([]float32, k)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * 3)
		}
		dst := make([]byte, k+4)
		QuantizeRowW8A8(src, dst)
		back := make([]float32, k)
		if err := DequantizeRow(W8A8, dst, back); err != nil {
			t.Fatal(err)
		}
		var amax float64
		for _, v := range src {
			amax = max(amax, math.Abs(float64(v)))
		}
		for i := range src {
			q := math.RoundToEven(float64(src[i] * (127 / float32(amax))))
			if int8(dst[i]) != int8(q) || math.Abs(float64(back[i]-src[i])) > amax/127/2*1.001 {
				t.Fatalf("k=%d [%d]: %g -> %d (%g), want %d", k, i, src[i], int8(dst[i]), back[i], int8(q))
			}
		}
	}
	ties := []float32{127, 0.5, 1.5, 2.5, -0.5, -1.5, -126.5, 126.5}
	dst := make([]byte, len(ties)+4)
	QuantizeRowW8A8(ties, dst)
	for i, want := range []int8{127, 0, 2, 2, 0, -2, -126, 126} {
		if int8(dst[i]) != want {
			t.Errorf("tie %g -> %d, want %d", ties[i], int8(dst[i]), want)
		}
	}
	zero := make([]byte, 3+4)
	QuantizeRowW8A8(make([]float32, 3), zero)
	for _, b := range zero {
		if b != 0 {
			t.Fatalf("zero row: %v", zero)
		}
	}
}
