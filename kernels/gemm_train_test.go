// This file compares Gemm (the fast path where the CPU has one) with the plain-Go GemmRef on
// random shapes with odd sizes and tails, every transpose combination, padded strides and
// accumulation. Tolerance: |fast − ref| <= 1e-5 · Σ_p |a_ip·b_pj| + 1e-30 per element (the two
// sum the same products in different orders in float32).
package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// gemmOperand returns a random matrix holding op() = [rows, cols] with a padded stride.
func gemmOperand(r *rand.Rand, rows, cols int, trans bool) Mat {
	sr, sc := rows, cols
	if trans {
		sr, sc = cols, rows
	}
	stride := sc + r.IntN(3)
	d := make([]float32, sr*stride)
	for i := range d {
		d[i] = float32(r.NormFloat64())
	}
	return Mat{Data: d, Stride: stride, T: trans}
}

func checkGemm(t *testing.T, p *Pool, r *rand.Rand, m, n, k int, ta, tb, acc bool) {
	t.Helper()
	a, b := gemmOperand(r, m, k, ta), gemmOperand(r, k, n, tb)
	ldc := n + r.IntN(2)
	c0 := make([]float32, m*ldc)
	for i := range c0 {
		c0[i] = float32(r.NormFloat64())
	}
	got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
	p.Gemm(m, n, k, a, b, got, ldc, acc)
	GemmRef(m, n, k, a, b, want, ldc, acc)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var bound float64
			for q := 0; q < k; q++ {
				bound += math.Abs(float64(a.at(i, q)) * float64(b.at(q, j)))
			}
			if d := math.Abs(float64(got[i*ldc+j] - want[i*ldc+j])); d > 1e-5*bound+1e-30 || math.IsNaN(d) {
				t.Fatalf("m=%d n=%d k=%d tA=%v tB=%v acc=%v: C[%d][%d] = %v, reference %v",
					m, n, k, ta, tb, acc, i, j, got[i*ldc+j], want[i*ldc+j])
			}
		}
		for j := n; j < ldc; j++ {
			if got[i*ldc+j] != c0[i*ldc+j] {
				t.Fatalf("m=%d n=%d k=%d: padding C[%d][%d] overwritten", m, n, k, i, j)
			}
		}
	}
}

// trainKernels are the micro-kernels this CPU can run.
func trainKernels() []gemmKernel {
	var ks []gemmKernel
	if useTrainAsm {
		ks = append(ks, kernelAVX2)
	}
	if useTrainAVX512 {
		ks = append(ks, kernelAVX512)
	}
	return ks
}

// eachKernel runs f with Gemm on every micro-kernel this CPU has (once, on the plain-Go path,
// without any).
func eachKernel(t *testing.T, f func(t *testing.T)) {
	ks := trainKernels()
	if len(ks) == 0 {
		f(t)
		return
	}
	saved := trainKernel
	defer func() { trainKernel = saved }()
	for _, k := range ks {
		trainKernel = k
		t.Run(k.name, f)
	}
}

func TestGemmMatchesReference(t *testing.T) { eachKernel(t, testGemmMatchesReference) }

func testGemmMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	p := NewPool(3)
	sizes := []int{1, 2, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 70}
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			for range 40 {
				m, n, k := sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))], sizes[r.IntN(len(sizes))]
				checkGemm(t, p, r, m, n, k, ta, tb, r.IntN(2) == 0)
			}
		}
	}
	// Shapes crossing the cache blocks (k > the k block, m and n > several panels).
	for _, s := range [][3]int{{97, 300, 531}, {256, 129, 300}, {13, 1000, 70}} {
		checkGemm(t, p, r, s[0], s[1], s[2], r.IntN(2) == 0, r.IntN(2) == 0, true)
	}
}

// TestGemmDeterministic: bit-identical results on pools of 1, 2 and 3 workers.
func TestGemmDeterministic(t *testing.T) { eachKernel(t, testGemmDeterministic) }

func testGemmDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	m, n, k := 77, 301, 259
	a, b := gemmOperand(r, m, k, true), gemmOperand(r, k, n, false)
	var first []float32
	for _, p := range []*Pool{Serial, NewPool(2), NewPool(3), NewPool(2)} {
		c := make([]float32, m*n)
		p.Gemm(m, n, k, a, b, c, n, false)
		if first == nil {
			first = c
			continue
		}
		for i := range c {
			if math.Float32bits(c[i]) != math.Float32bits(first[i]) {
				t.Fatalf("%d workers: C[%d] = %v, serial %v", p.Workers(), i, c[i], first[i])
			}
		}
	}
}

func TestGemmBadShapePanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "does not fit") {
			t.Errorf("panic %v, want a shape message", r)
		}
	}()
	Default.Gemm(4, 4, 4, Mat{Data: make([]float32, 15), Stride: 4}, Mat{Data: make([]float32, 16), Stride: 4}, make([]float32, 16), 4, false)
}
