// This file holds the exported vector helpers (Axpy, Scale) and the AVX2 routes of Dot and the
// element-wise kernels of elementwise.go. Each routes to the assembly for the multiple-of-8
// bulk and finishes the tail in Go.
package kernels

// Axpy sets y[i] += a*x[i] for i < len(y) (len(x) >= len(y)).
func Axpy(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	i := 0
	if useFloatAsm && !Reference {
		i = len(y) &^ 7
		if i > 0 {
			axpyF32(&y[0], a, &x[0], i)
		}
	}
	for ; i < len(y); i++ {
		y[i] += a * x[i]
	}
}

// Scale sets x[i] *= a.
func Scale(x []float32, a float32) {
	i := 0
	if useFloatAsm && !Reference {
		i = len(x) &^ 7
		if i > 0 {
			scaleF32(&x[0], a, i)
		}
	}
	for ; i < len(x); i++ {
		x[i] *= a
	}
}

// dotFast is Dot on the AVX2 path (len(b) >= len(a), len(a) >= 8).
func dotFast(a, b []float32) float32 {
	b = b[:len(a)]
	n8 := len(a) &^ 7
	s := dotF32(&a[0], &b[0], n8)
	for i := n8; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

func rmsNormFast(out, x, w []float32, eps float32) {
	n8 := len(x) &^ 7
	w = w[:len(x)]
	out = out[:len(x)]
	var ss float64
	if n8 > 0 {
		ss = sumSqF64(&x[0], n8)
	}
	for _, v := range x[n8:] {
		ss += float64(v * v)
	}
	scale := rmsScale(ss, len(x), eps)
	if n8 > 0 {
		mulScaleF32(&out[0], &x[0], &w[0], scale, n8)
	}
	for i := n8; i < len(x); i++ {
		out[i] = x[i] * scale * w[i]
	}
}

func softmaxFast(x []float32) {
	Scale(x, float32(1/expSubFast(x, maxFast(x))))
}

func swigluFast(out, a, b []float32) {
	n8 := len(a) &^ 7
	b = b[:len(a)]
	out = out[:len(a)]
	if n8 > 0 {
		swigluF32(&out[0], &a[0], &b[0], n8)
	}
	swigluRef(out[n8:], a[n8:], b[n8:])
}

func addFast(dst, src []float32) {
	n8 := len(dst) &^ 7
	src = src[:len(dst)]
	if n8 > 0 {
		addF32(&dst[0], &src[0], n8)
	}
	for i := n8; i < len(dst); i++ {
		dst[i] += src[i]
	}
}
