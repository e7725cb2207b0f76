// This file implements the element-wise and row-wise kernels of a Llama block: RMSNorm,
// softmax and the SwiGLU gate SiLU(a)*b.
package kernels

import "math"

// RMSNorm sets out = x / sqrt(mean(x²) + eps) * w. x, w and out are [k]; out may alias x.
// The sum of squares is accumulated in float64 (as ggml does).
func RMSNorm(out, x, w []float32, eps float32) {
	if slowOn && slowRMSNorm > 0 && len(x) > 0 && &out[0] != &x[0] { // an injected slowdown: slowdown.go
		j := part(slowRMSNorm, len(x)) // the first elements (not in place: that would change x)
		rmsNorm(out[:j], x[:j], w[:j], eps)
	}
	rmsNorm(out, x, w, eps)
}

// rmsNorm is RMSNorm without the injected-slowdown hook.
func rmsNorm(out, x, w []float32, eps float32) {
	if useFloatAsm && !Reference {
		rmsNormFast(out, x, w, eps)
		return
	}
	rmsNormRef(out, x, w, eps)
}

// rmsScale is 1/sqrt(ss/k + eps) as the reference computes it.
func rmsScale(ss float64, k int, eps float32) float32 {
	mean := float32(ss / float64(k))
	return float32(1 / math.Sqrt(float64(mean+eps)))
}

// expRef is the reference f32 exponential.
func expRef(v float32) float32 { return float32(math.Exp(float64(v))) }

// rmsNormRef is the plain-Go RMSNorm.
func rmsNormRef(out, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	scale := rmsScale(ss, len(x), eps)
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// Softmax replaces x ([k]) by exp(x - max) / sum, in place. The AVX2 path uses a polynomial
// exp (max relative error ~2e-7, see docs/kernels-float.md).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	if useFloatAsm && !Reference {
		softmaxFast(x)
		return
	}
	softmaxRef(x)
}

// softmaxRef is the plain-Go Softmax (len(x) > 0).
func softmaxRef(x []float32) {
	inv := float32(1 / expSubRef(x, maxRef(x)))
	for i := range x {
		x[i] *= inv
	}
}

// SwiGLU sets out = SiLU(a) * b element-wise, SiLU(a) = a / (1 + exp(-a)). a, b and out are
// [k]; out may alias a or b.
func SwiGLU(out, a, b []float32) {
	if useFloatAsm && !Reference {
		swigluFast(out, a, b)
		return
	}
	swigluRef(out, a, b)
}

// swigluRef is the plain-Go SwiGLU.
func swigluRef(out, a, b []float32) {
	b = b[:len(a)]
	out = out[:len(a)]
	for i, v := range a {
		out[i] = v / (1 + float32(math.Exp(float64(-v)))) * b[i]
	}
}

// Add sets dst += src element-wise (both [k]).
func Add(dst, src []float32) {
	if useFloatAsm && !Reference {
		addFast(dst, src)
		return
	}
	addRef(dst, src)
}

// addRef is the plain-Go Add.
func addRef(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// LogSoftmaxAt returns log softmax(row)[tok] with a float32 max and float64 sum.
func LogSoftmaxAt(row []float32, tok int) float64 {
	mx := row[0]
	for _, v := range row[1:] {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v - mx))
	}
	return float64(row[tok]-mx) - math.Log(sum)
}
