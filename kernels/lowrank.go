// This file holds the two kernels of run-time low-rank (LoRA) updates, y += (x·Aᵀ)·B: the rank-r
// dots of one input row with A's rows, and the rank-r axpys of B's columns into one output row
// with the output kept in registers. Each result depends only on its own row and the column or
// A-row index (never on which other rows share the call pattern), so callers may interleave rows
// (A's rows outer, a group's rows inner, to read A once per group) and keep batch invariance.
package kernels

// LowRankDots sets t[j] = Σ_c w[j*k+c]·x[c] for j < len(t) (w row-major [len(t), k]). On the
// AVX2 path w's rows go four at a time (the float GEMV kernels), x loaded once per four; a call
// over rows [j0, j1) of w with j0 a multiple of 4 gives the same bits as a call over all rows.
func LowRankDots(t, w, x []float32, k int) {
	if len(t) == 0 {
		return
	}
	w = w[:len(t)*k]
	x = x[:k]
	if !useFloatAsm || Reference || k < 8 {
		for j := range t {
			t[j] = Dot(x, w[j*k:(j+1)*k])
		}
		return
	}
	k8 := k &^ 7
	j := 0
	for ; j+4 <= len(t); j += 4 {
		gemvF32x4(&w[j*k], 4*k, &x[0], k8, &t[j])
	}
	if j < len(t) {
		gemvF32rows(&w[j*k], 4*k, &x[0], k8, &t[j], len(t)-j)
	}
	for j := range t {
		s := t[j]
		for c := k8; c < k; c++ {
			s += x[c] * w[j*k+c]
		}
		t[j] = s
	}
}

// LowRankAxpys adds Σ_j p[j]·x[j*stride : j*stride+len(y)] to y for j < len(p), each element's
// sum in the order j = 0, 1, … (the bits of len(p) Axpy calls in order; on the AVX2 path y stays
// in registers across all j). Columns are independent: splitting y into pieces that start at
// multiples of 8 gives the same bits.
func LowRankAxpys(y, p, x []float32, stride int) {
	if len(p) == 0 || len(y) == 0 {
		return
	}
	x = x[:(len(p)-1)*stride+len(y)]
	if !useFloatAsm || !attnAsm || Reference {
		for j, a := range p {
			Axpy(y, a, x[j*stride:])
		}
		return
	}
	n8 := len(y) &^ 7
	if n8 > 0 {
		attnPV(&y[0], &p[0], &x[0], stride, n8, len(p))
	}
	for c := n8; c < len(y); c++ {
		s := y[c]
		for j, a := range p {
			s += a * x[j*stride+c]
		}
		y[c] = s
	}
}
