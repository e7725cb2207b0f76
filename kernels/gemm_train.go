// This file implements Gemm, the general f32 matrix product the trainer runs for all three
// products of a linear layer — Y = X·Wᵀ (forward), dX = dY·W and dW += dYᵀ·X (backward) —
// and for attention: C (+)= op(A)·op(B) with either operand transposed and any leading
// dimensions. The fast path (gemm_train_fast.go) packs panels and runs the AVX2/FMA 6x16
// micro-kernel of gemm_train_amd64.s; gemmRef below is the plain-Go reference.
//
// Determinism: every element of C is computed by one goroutine, summing over k in a fixed
// order (k blocks in sequence, each block's products in the micro-kernel's order), and the
// work is split along n only, so results are bit-identical whatever the goroutine timing and
// whatever the number of workers.
package kernels

import "fmt"

// Mat is a row-major f32 matrix operand of Gemm: element (r, c) of the stored matrix is
// Data[r*Stride+c]. With T set the operand is used transposed.
type Mat struct {
	Data   []float32
	Stride int  // elements between consecutive stored rows
	T      bool // use the transpose of the stored matrix
}

// at is element (i, j) of op(m).
func (m Mat) at(i, j int) float32 {
	if m.T {
		return m.Data[j*m.Stride+i]
	}
	return m.Data[i*m.Stride+j]
}

// check panics with a clear message when op(m) ([rows, cols]) does not fit m.Data.
func (m Mat) check(name string, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	sr, sc := rows, cols
	if m.T {
		sr, sc = cols, rows
	}
	if m.Stride < sc || len(m.Data) < (sr-1)*m.Stride+sc {
		panic(fmt.Sprintf("kernels: gemm: %s [%d x %d] (transposed=%v) does not fit %d values with stride %d",
			name, rows, cols, m.T, len(m.Data), m.Stride))
	}
}

// Gemm computes C = op(A)·op(B), or C += op(A)·op(B) when acc is set, on the pool's workers.
// op(A) is [m, k], op(B) is [k, n], C is [m, n] with row stride ldc; C must not alias A or B.
// Operands that do not fit their slices are a programming error and panic.
func (p *Pool) Gemm(m, n, k int, a, b Mat, c []float32, ldc int, acc bool) {
	if gemmEmpty(m, n, k, a, b, c, ldc, acc) {
		return
	}
	if p.bf16 != nil && !Reference && BF16Fast() && m*n*k >= gemmMinFlops {
		gemmBF16(p, m, n, k, p.operand(a), p.operand(b), c, ldc, acc)
		return
	}
	if !Reference && gemmFast(p, m, n, k, a, b, c, ldc, acc) {
		return
	}
	gemmGo(p, m, n, k, a, b, c, ldc, acc)
}

// gemmGo is the portable Gemm: columns of C split across workers, each element summed over k
// in order with one float32 accumulator, like gemmRef (so the two agree bit for bit).
func gemmGo(p *Pool, m, n, k int, a, b Mat, c []float32, ldc int, acc bool) {
	p.For(n, max(1, (1<<16)/max(1, m*k)), func(lo, hi int) {
		gemmRef(m, k, a, b, c, ldc, acc, lo, hi)
	})
}

// gemmRef is the plain-Go reference for columns [lo, hi) of C: C[i][j] (+)= Σ_p op(A)[i][p] ·
// op(B)[p][j], summed in order of p in one float32.
func gemmRef(m, k int, a, b Mat, c []float32, ldc int, acc bool, lo, hi int) {
	for i := 0; i < m; i++ {
		for j := lo; j < hi; j++ {
			var s float32
			for q := 0; q < k; q++ {
				s += a.at(i, q) * b.at(q, j)
			}
			if acc {
				c[i*ldc+j] += s
			} else {
				c[i*ldc+j] = s
			}
		}
	}
}

// GemmRef is the single-threaded plain-Go reference of Gemm (for tests and comparisons).
func GemmRef(m, n, k int, a, b Mat, c []float32, ldc int, acc bool) {
	a.check("A", m, k)
	b.check("B", k, n)
	Mat{Data: c, Stride: ldc}.check("C", m, n)
	gemmRef(m, k, a, b, c, ldc, acc, 0, n)
}

// gemmEmpty checks a GEMM's operands (a programming error panics) and does the whole product
// when it has no work: nothing for m or n = 0, C cleared (or kept, with acc) for k = 0.
func gemmEmpty(m, n, k int, a, b Mat, c []float32, ldc int, acc bool) bool {
	a.check("A", m, k)
	b.check("B", k, n)
	Mat{Data: c, Stride: ldc}.check("C", m, n)
	if m == 0 || n == 0 {
		return true
	}
	if k == 0 {
		if !acc {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return true
	}
	return false
}
