// This file implements the two halves of a softmax as kernels of their own, for callers
// that combine partial softmaxes (the trainer's vocab-parallel cross-entropy reduces the row
// maxima and the sums of exponentials across ranks between the two): Max, and ExpSub, which
// exponentiates in place relative to a given maximum and returns the sum. Softmax is built
// from them. The fast paths use the AVX2 max and polynomial exp (max relative error ~2e-7);
// maxRef and expSubRef are the plain references.
package kernels

import "math"

// Max returns the largest value of x ([k], k >= 1).
func Max(x []float32) float32 {
	if useFloatAsm && !Reference {
		return maxFast(x)
	}
	return maxRef(x)
}

// ExpSub sets x[i] = exp(x[i] − mx) in place and returns the sum of the new values (float64
// accumulation of float32 parts). With mx >= every x[i] no term overflows. x is [k].
func ExpSub(x []float32, mx float32) float64 {
	if useFloatAsm && !Reference {
		return expSubFast(x, mx)
	}
	return expSubRef(x, mx)
}

func maxRef(x []float32) float32 {
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	return mx
}

func expSubRef(x []float32, mx float32) float64 {
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		x[i] = e
		sum += float64(e)
	}
	return sum
}

func maxFast(x []float32) float32 {
	n8 := len(x) &^ 7
	mx := x[0]
	if n8 > 0 {
		mx = maxF32(&x[0], n8)
	}
	for _, v := range x[n8:] {
		mx = max(mx, v)
	}
	return mx
}

func expSubFast(x []float32, mx float32) float64 {
	n8 := len(x) &^ 7
	var sum float64
	if n8 > 0 {
		sum = float64(expSubF32(&x[0], mx, n8))
	}
	for i := n8; i < len(x); i++ {
		e := expRef(x[i] - mx)
		x[i] = e
		sum += float64(e)
	}
	return sum
}
