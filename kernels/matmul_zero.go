// This file multiplies by the zero-corrected weights Q4_0Z and Q8_0Z (tensor/groupzero.go:
// Hugging Face AWQ / GPTQ checkpoints repacked at load). Such a weight is Q4_0 (Q8_0) rows
// plus a float32 constant per row and group of columns, so
//
//	out[i][r] = Σ_j base[r][j]·xs[i][j] + Σ_g Corr[r][g]·S[i][g],   S[i][g] = Σ_{j in g} xs[i][j]
//
// where xs is the token in the weight's stored column order (x itself unless GPTQ act-order
// sorted the columns). The first term is the Q4_0 (Q8_0) matmul on its fast kernels (decode and
// prefill alike), the second k/Group vector updates (axpy) of each token's output with the
// group-major [k/Group, n] corrections, 1/Group of the work and 4/Group bytes per weight
// (0.25 bit for groups of 128). One token on the VNNI kernels with zero codes (4 bits, groups
// of 128k) skips both: the zero goes into the integer dot product (matmul_zero_fused.go).
package kernels

import (
	"fmt"
	"sync"

	"github.com/llmcloud/llmcloud/tensor"
)

var zeroBufs sync.Pool // *[]float32 scratch of matmulZero

func getZeroBuf(n int) *[]float32 {
	b, _ := zeroBufs.Get().(*[]float32)
	if b == nil {
		b = new([]float32)
	}
	if cap(*b) < n {
		*b = make([]float32, n)
	}
	*b = (*b)[:n]
	return b
}

// matmulZero computes out = x · wᵀ for a Q4_0Z / Q8_0Z weight w [n, k].
func (p *Pool) matmulZero(out, x []float32, w *tensor.Tensor, m, n, k int) error {
	if err := w.CheckZero(); err != nil {
		return fmt.Errorf("matmul: %w", err)
	}
	z := w.Zero
	ng := k / z.Group
	xs := x[:m*k]
	if z.Perm != nil {
		pb := getZeroBuf(m * k)
		defer zeroBufs.Put(pb)
		xs = *pb
		for i := 0; i < m; i++ {
			src, dst := x[i*k:(i+1)*k], xs[i*k:(i+1)*k]
			for j, c := range z.Perm {
				dst[j] = src[c]
			}
		}
	}
	if m == 1 && zeroFused(w) { // decode: the zeros inside the VNNI dot product (matmul_zero_fused.go)
		matmulZeroFused(p, out, xs, w)
		return nil
	}
	if err := p.MatMul(out, xs, w.Base(), m); err != nil {
		return err
	}
	sb := getZeroBuf(m * ng)
	defer zeroBufs.Put(sb)
	sums := *sb
	groupSums(sums, xs, m, k, z.Group)
	// out[i][r] += Σ_g sums[i][g]·Corr[g][r]: per token and group one axpy over a row range.
	corr := func(lo, hi int) {
		for i := 0; i < m; i++ {
			o := out[i*n+lo : i*n+hi]
			for g := 0; g < ng; g++ {
				Axpy(o, sums[i*ng+g], z.Corr[g*n+lo:g*n+hi])
			}
		}
	}
	if m*n*ng < zeroSerialMax {
		corr(0, n) // decode: cheaper here than waking the pool again
	} else {
		p.For(n, 512, corr)
	}
	return nil
}

// zeroSerialMax is the number of correction multiply-adds below which they run on the
// calling goroutine: one decode token's corrections of a TinyLlama matrix (at most 5632x44)
// stream 0.1-1 MB, a few microseconds to tens, about what one more pool dispatch costs on a
// loaded host (BenchmarkZeroDecodeLayers).
var zeroSerialMax = 1 << 18

// groupSums sets sums[i*(k/g)+c] to the sum of token i's values in group c (g columns each).
func groupSums(sums, xs []float32, m, k, g int) {
	ng := k / g
	for i := 0; i < m; i++ {
		for c := 0; c < ng; c++ {
			var s0, s1, s2, s3 float32
			v := xs[i*k+c*g : i*k+(c+1)*g]
			for j := 0; j+4 <= len(v); j += 4 {
				s0 += v[j]
				s1 += v[j+1]
				s2 += v[j+2]
				s3 += v[j+3]
			}
			sums[i*ng+c] = (s0 + s1) + (s2 + s3)
		}
	}
}
