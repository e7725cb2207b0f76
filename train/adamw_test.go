package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmcloud/llmcloud/kernels"
)

// adamwRef is the plain serial reference in float64: scale, clip to the global norm, then
// PyTorch's AdamW update (decay first, then the Adam step). It returns the norm.
func adamwRef(w, g, m, v []float64, spans []span, t int, h Hyper) float64 {
	var sq float64
	for i := range g {
		g[i] *= float64(h.GradScale)
		sq += g[i] * g[i]
	}
	norm := math.Sqrt(sq)
	if h.Clip > 0 && norm > h.Clip {
		for i := range g {
			g[i] *= h.Clip / norm
		}
	}
	bc1 := 1 - math.Pow(h.Beta1, float64(t))
	bc2 := 1 - math.Pow(h.Beta2, float64(t))
	for _, sp := range spans {
		for i := sp.lo; i < sp.hi; i++ {
			if sp.decay {
				w[i] *= 1 - h.LR*h.WeightDecay
			}
			m[i] = h.Beta1*m[i] + (1-h.Beta1)*g[i]
			v[i] = h.Beta2*v[i] + (1-h.Beta2)*g[i]*g[i]
			w[i] -= h.LR * (m[i] / bc1) / (math.Sqrt(v[i]/bc2) + h.Eps)
		}
	}
	return norm
}

// testSpans cuts n elements into spans of odd sizes, alternately decayed.
func testSpans(n int, r *rand.Rand) []span {
	var s []span
	for lo := 0; lo < n; {
		hi := min(n, lo+1+r.IntN(3*chunkElems))
		s = append(s, span{lo: lo, hi: hi, decay: len(s)%2 == 0})
		lo = hi
	}
	return s
}

// TestAdamWMatchesReference runs several steps on odd sizes (tails of every chunk) with and
// without clipping against the float64 reference; tolerance 1e-5 relative to the weight
// scale (float32 rounding of a few updates).
func TestAdamWMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, chunkElems - 1, chunkElems + 3, 3*chunkElems + 17} {
		for _, clip := range []float64{0, 0.5} {
			spans := testSpans(n, r)
			w32 := make([]float32, n)
			w64 := make([]float64, n)
			for i := range w32 {
				w32[i] = float32(r.NormFloat64())
				w64[i] = float64(w32[i])
			}
			m64, v64 := make([]float64, n), make([]float64, n)
			opt := NewAdamW(n, spans, kernels.NewPool(3))
			h := Hyper{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 0.5, Clip: clip}
			for step := 1; step <= 4; step++ {
				g32 := make([]float32, n)
				g64 := make([]float64, n)
				for i := range g32 {
					g32[i] = float32(r.NormFloat64() * 0.1)
					g64[i] = float64(g32[i])
				}
				got := opt.Step(w32, g32, h)
				want := adamwRef(w64, g64, m64, v64, spans, step, h)
				if math.Abs(got-want) > 1e-9*want+1e-12 {
					t.Fatalf("n=%d clip=%g step %d: norm %v, reference %v", n, clip, step, got, want)
				}
			}
			for i := range w32 {
				if d := math.Abs(float64(w32[i]) - w64[i]); d > 1e-5*(1+math.Abs(w64[i])) {
					t.Fatalf("n=%d clip=%g: w[%d] = %v, reference %v", n, clip, i, w32[i], w64[i])
				}
			}
		}
	}
}

// TestAdamWThreadIndependent: the update is bit-identical with 1 and 4 workers.
func TestAdamWThreadIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 5*chunkElems + 123
	spans := testSpans(n, r)
	base := make([]float32, n)
	grad := make([]float32, n)
	for i := range base {
		base[i], grad[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	h := Hyper{LR: 3e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, GradScale: 1, Clip: 1}
	var outs [2][]float32
	var norms [2]float64
	for k, threads := range []int{1, 4} {
		w := append([]float32(nil), base...)
		opt := NewAdamW(n, spans, kernels.NewPool(threads))
		for range 3 {
			norms[k] = opt.Step(w, append([]float32(nil), grad...), h)
		}
		outs[k] = w
	}
	if math.Float64bits(norms[0]) != math.Float64bits(norms[1]) {
		t.Fatalf("norm %v with 1 thread, %v with 4", norms[0], norms[1])
	}
	for i := range outs[0] {
		if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
			t.Fatalf("w[%d]: %v with 1 thread, %v with 4", i, outs[0][i], outs[1][i])
		}
	}
}

// TestNoDecayOnUndecayedSpans: with a zero gradient, decayed weights shrink by lr·wd and the
// others stay put.
func TestNoDecayOnUndecayedSpans(t *testing.T) {
	w := []float32{1, 1, 1, 1}
	spans := []span{{0, 2, true}, {2, 4, false}}
	opt := NewAdamW(4, spans, nil)
	opt.Step(w, make([]float32, 4), Hyper{LR: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.5, GradScale: 1})
	if w[0] != 0.95 || w[1] != 0.95 || w[2] != 1 || w[3] != 1 {
		t.Fatalf("after one decay-only step w = %v, want [0.95 0.95 1 1]", w)
	}
}
