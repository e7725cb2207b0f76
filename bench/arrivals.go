// Arrivals: the gaps between request sends.

package bench

import (
	"math"
	"math/rand/v2"
	"time"
)

// Gaps returns n inter-arrival gaps for rate requests/s (math.Inf(1): all zero, everything at
// once). With burstiness 1 the gaps are exponential (a Poisson process); otherwise they are
// gamma distributed with shape burstiness and scale 1/(rate*burstiness), so the mean gap is
// always 1/rate while the spread grows as burstiness falls below 1 (vLLM's definition).
func Gaps(n int, rate, burstiness float64, rng *rand.Rand) []time.Duration {
	gaps := make([]time.Duration, n)
	if math.IsInf(rate, 1) || rate <= 0 {
		return gaps
	}
	theta := 1 / (rate * burstiness)
	for i := range gaps {
		gaps[i] = time.Duration(gammaSample(rng, burstiness) * theta * float64(time.Second))
	}
	return gaps
}

// gammaSample draws from Gamma(shape, 1) by Marsaglia and Tsang's method ("A simple method for
// generating gamma variables", 2000); shape < 1 uses the boost Gamma(k) = Gamma(k+1) * U^(1/k).
func gammaSample(rng *rand.Rand, shape float64) float64 {
	if shape == 1 {
		return rng.ExpFloat64()
	}
	if shape < 1 {
		return gammaSample(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}
