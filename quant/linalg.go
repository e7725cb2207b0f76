// Package quant quantizes weight matrices to GGUF block types with calibration: rtn (the
// reference quantizers of package tensor), imatrix (importance-weighted choice of each
// block's scales), awq (activation-aware per-input-channel scaling folded into the previous
// norm or matrix) and gptq (column-by-column rounding with error compensation through the
// damped inverse Hessian). Activation statistics come from package quant/calib.
//
// This file holds the small dense linear algebra the methods share.
package quant

import (
	"encoding/binary"
	"math"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// MatMulT sets out[m,n] = a[m,k] · b[n,k]^T with the kernels' F32 GEMM.
func MatMulT(out, a, b []float32, m, n, k int) error {
	return kernels.Default.MatMul(out, a, F32Tensor("b", b, n, k), m)
}

// F32Tensor wraps f as an F32 tensor [rows, cols] (a copy).
func F32Tensor(name string, f []float32, rows, cols int) *tensor.Tensor {
	buf := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	return &tensor.Tensor{Name: name, Type: tensor.F32, Shape: []int{rows, cols}, Data: buf}
}

// outputErr is ||(w - q) X^T||² for w, q [rows, k] and samples x [n, k]: the squared error of
// the layer's outputs on the samples.
func outputErr(w, q, x []float32, rows, k, n int) (float64, error) {
	d := make([]float32, len(w))
	for i := range w {
		d[i] = w[i] - q[i]
	}
	out := make([]float32, n*rows)
	if err := MatMulT(out, x, d, n, rows, k); err != nil {
		return 0, err
	}
	var s float64
	for _, v := range out {
		s += float64(v) * float64(v)
	}
	return s, nil
}

// cholesky factors the symmetric positive definite a [n,n] in place into its lower factor L
// (a = L L^T); it reports false if a is not positive definite.
func cholesky(a []float64, n int) bool {
	for j := 0; j < n; j++ {
		rj := a[j*n : j*n+n]
		s := rj[j]
		for k := 0; k < j; k++ {
			s -= rj[k] * rj[k]
		}
		if s <= 0 || math.IsNaN(s) {
			return false
		}
		d := math.Sqrt(s)
		rj[j] = d
		for i := j + 1; i < n; i++ {
			ri := a[i*n : i*n+n]
			t := ri[j]
			for k := 0; k < j; k++ {
				t -= ri[k] * rj[k]
			}
			ri[j] = t / d
		}
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			a[i*n+j] = 0
		}
	}
	return true
}

// invUpperCholesky returns U, upper triangular with H^-1 = U^T U, for the symmetric positive
// definite h [n,n] (GPTQ's factor: row j of U gives column j's error propagation).
func invUpperCholesky(h []float64, n int) ([]float64, bool) {
	l := append([]float64(nil), h...)
	if !cholesky(l, n) {
		return nil, false
	}
	// inv(L) by forward substitution, column by column: Li = L^-1 (lower).
	li := make([]float64, n*n)
	for c := 0; c < n; c++ {
		for i := c; i < n; i++ {
			s := 0.0
			if i == c {
				s = 1
			}
			for k := c; k < i; k++ {
				s -= l[i*n+k] * li[k*n+c]
			}
			li[i*n+c] = s / l[i*n+i]
		}
	}
	// H^-1 = Li^T Li; its Cholesky factor gives the upper U with H^-1 = U^T U where U = chol(H^-1)^T.
	hinv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			s := 0.0
			for k := i; k < n; k++ { // Li[k,i] nonzero for k >= i
				s += li[k*n+i] * li[k*n+j]
			}
			hinv[i*n+j], hinv[j*n+i] = s, s
		}
	}
	if !cholesky(hinv, n) {
		return nil, false
	}
	u := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			u[j*n+i] = hinv[i*n+j]
		}
	}
	return u, true
}
