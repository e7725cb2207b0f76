// expApprox: e^x for x in [-700, 0] to a relative error below expErr, cheaply (inlined, no
// special cases). The sampler adds and compares these approximations only where it can bound
// the effect of the error: it decides with them when the margin is wide, and recomputes with
// math.Exp (what the plain algorithm uses) when it is not, so the results stay exact.
package sample

import "math"

// expErr bounds |expApprox(x)/math.Exp(x) - 1| on [-700, 0]: the degree-5 Taylor remainder is
// below 3e-15 on the reduced range, the table and the rounding a few units in the last place;
// the bound is taken about thirty times larger (TestExpApprox measures it).
const expErr = 1e-13

const (
	expScale = 32 / math.Ln2                      // x*expScale = k: x = k ln2/32 + r
	expStepH = 0.021660834550857544               // ln2/32 with its low 32 bits zero
	expStepL = math.Ln2/32 - 0.021660834550857544 // the rest
)

// expTable[j] is the encoding of 2^(j/32); adding m<<52 to it multiplies by 2^m.
var expTable = func() (t [32]uint64) {
	for j := range t {
		t[j] = math.Float64bits(math.Exp2(float64(j) / 32))
	}
	return t
}()

// expApprox returns e^x for x in [-700, 0]: x = (32m + j) ln2/32 + r with |r| <= ln2/64, so
// e^x = 2^m 2^(j/32) e^r, e^r by its Taylor polynomial of degree 5.
func expApprox(x float64) float64 {
	k := int(x*expScale - 0.5) // x <= 0: truncation toward zero rounds to nearest
	kf := float64(k)
	r := (x - kf*expStepH) - kf*expStepL
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120)))))
	return p * math.Float64frombits(expTable[k&31]+uint64(k>>5)<<52)
}
