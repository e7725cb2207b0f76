package kernels

import (
	"math"
	"testing"
)

// yarnPlain is YaRN as the YaRN paper's reference code (and transformers' yarn rope) writes
// it, in float64: inverse frequencies blended between base^(-2i/d)/s and base^(-2i/d) by a
// linear ramp over the pairs between the correction dims, cos and sin times 0.1·ln s + 1.
func yarnPlain(dims int, base float64, y Yarn, pos int) []float64 {
	fast, slow := y.Betas()
	corr := func(beta float64) float64 {
		return float64(dims) * math.Log(float64(y.OrigCtx)/(beta*2*math.Pi)) / (2 * math.Log(base))
	}
	low, high := math.Max(0, math.Floor(corr(fast))), math.Min(float64(dims-1), math.Ceil(corr(slow)))
	if low == high {
		high += 0.001
	}
	cs := make([]float64, dims)
	m := 0.1*math.Log(y.Factor) + 1
	for i := 0; i < dims/2; i++ {
		extra := math.Pow(base, -float64(2*i)/float64(dims))
		ramp := math.Min(1, math.Max(0, (float64(i)-low)/(high-low)))
		mask := 1 - ramp // the weight of extrapolation (the original frequency)
		f := extra/y.Factor*(1-mask) + extra*mask
		s, c := math.Sincos(float64(pos) * f)
		cs[2*i], cs[2*i+1] = c*m, s*m
	}
	return cs
}

func TestRopeYarnMatchesPlain(t *testing.T) {
	for _, tc := range []struct {
		dims int
		base float64
		y    Yarn
	}{
		{8, 10000, Yarn{Factor: 4, OrigCtx: 32}},
		{64, 10000, Yarn{Factor: 40, OrigCtx: 4096}}, // DeepSeek-V2's
		{16, 500000, Yarn{Factor: 8, OrigCtx: 256, BetaFast: 16, BetaSlow: 2}},
		{32, 10000, Yarn{Factor: 1, OrigCtx: 128}},
	} {
		r, err := NewRope(tc.dims, tc.base, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SetYarn(tc.y); err != nil {
			t.Fatal(err)
		}
		cs := make([]float32, tc.dims)
		var worst float64
		for _, pos := range []int{0, 1, 7, 31, 100, 1000} {
			r.Table(cs, pos)
			want := yarnPlain(tc.dims, tc.base, tc.y, pos)
			for i, w := range want {
				// float32 angles as ggml builds them: error grows with the position
				tol := 2e-6 * (1 + float64(pos))
				d := math.Abs(float64(cs[i]) - w)
				worst = math.Max(worst, d/(1+float64(pos)))
				if d > tol {
					t.Fatalf("%+v dims %d pos %d: cs[%d] = %v, plain %v", tc.y, tc.dims, pos, i, cs[i], w)
				}
			}
		}
		t.Logf("%+v dims %d base %g: max |diff|/(1+pos) %.2g", tc.y, tc.dims, tc.base, worst)
	}
	r, _ := NewRope(8, 10000, false, nil)
	for _, bad := range []Yarn{{Factor: 0.5, OrigCtx: 10}, {Factor: 2}, {Factor: math.NaN(), OrigCtx: 4}, {Factor: 2, OrigCtx: 4, BetaFast: -1}} {
		if err := r.SetYarn(bad); err == nil {
			t.Errorf("SetYarn(%+v) accepted", bad)
		}
	}
}
