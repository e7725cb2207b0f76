// This file implements the element-wise and row-wise kernels of a Llama block: RMSNorm,
// softmax and the SwiGLU gate SiLU(a)*b.
package kernels

import "math"

// RMSNorm sets out = x / sqrt(mean(x²) + eps) * w. x, w and out are [k]; out may alias x.
// The sum of squares is accumulated in float64 (as ggml does).
func RMSNorm(out, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	mean := float32(ss / float64(len(x)))
	scale := float32(1 / math.Sqrt(float64(mean+eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// Softmax replaces x ([k]) by exp(x - max) / sum, in place.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// SwiGLU sets out = SiLU(a) * b element-wise, SiLU(a) = a / (1 + exp(-a)). a, b and out are
// [k]; out may alias a or b.
func SwiGLU(out, a, b []float32) {
	b = b[:len(a)]
	out = out[:len(a)]
	for i, v := range a {
		out[i] = v / (1 + float32(math.Exp(float64(-v)))) * b[i]
	}
}

// Add sets dst += src element-wise (both [k]).
func Add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}
