// This file runs the F16 GEMM on the packs of f16_prepack.go with broadcast kernels: a pack
// holds the weight in panels of 16 rows, for each column the 16 rows' values side by side, so
// a kernel keeps 16 outputs of an activation row in two registers (one output per lane),
// broadcasts the row's value of each column and adds its products with the panel's by FMA.
// Every output out[i, o] is then one chain of FMAs over the columns in order,
//
//	s = 0; for c := 0; c < k; c++ { s = fma(x[i, c], w[o, c], s) }
//
// with no horizontal sums: the same bits whatever the tile, the item split, the k blocking or
// m, so one activation row (MatMulInvariant) runs the same kernels and gets the same bits as
// any batch. f16BcastRef is the plain-Go twin. See docs/kernels-float.md ("F16 packs").
package kernels

import (
	"math"

	"github.com/llmcloud/llmcloud/tensor"
)

// bcKC is the pack's k block (columns): a 6-row activation tile of bcKC f32 (12 KiB) stays in
// L1 while the panels of an item's block (up to bcNB rows x bcKC F16, L2) stream past it.
// Results do not depend on it.
const (
	bcKC = 512
	bcNB = 192
)

// bcPanels is the number of 16-row panels of an [n, k] pack.
func bcPanels(n int) int { return (n + 15) / 16 }

type bcKernel = func(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int)

// bcKernel1 are the one-panel kernels by activation rows (bcF16R{mr}P1).
var bcKernel1 = [7]bcKernel{nil, bcF16R1P1, bcF16R2P1, bcF16R3P1, bcF16R4P1, bcF16R5P1, bcF16R6P1}

// packBcast writes the F16 weight w [n, k] (row stride k) into dst in the pack layout: for
// the k block at column k0 (bcKC columns, kb wide), panel j (rows 16j..16j+15, rows past n
// zero) at dst[np*16*k0 + j*16*kb:], for each column c the 16 rows' values at 16c.
func packBcast(dst, w []uint16, n, k, j0, j1 int) {
	np := bcPanels(n)
	for j := j0; j < j1; j++ {
		rows := min(16, n-16*j)
		for k0 := 0; k0 < k; k0 += bcKC {
			kb := min(bcKC, k-k0)
			d := dst[np*16*k0+j*16*kb:][:16*kb]
			if rows < 16 {
				for r := 0; r < rows; r++ {
					src := w[(16*j+r)*k+k0:][:kb]
					for c, v := range src {
						d[16*c+r] = v
					}
				}
				continue
			}
			c0 := 0
			if useFloatAsm {
				c0 = kb &^ 7
				packPanel16(&d[0], &w[16*j*k+k0], 2*k, c0)
			}
			var src [16][]uint16
			for r := range src {
				src[r] = w[(16*j+r)*k+k0:][:kb]
			}
			for c := c0; c < kb; c++ {
				o := (*[16]uint16)(d[16*c:])
				for r := range o {
					o[r] = src[r][c]
				}
			}
		}
	}
}

// bcastRows computes rows [r0, r1) of out = x · wᵀ (x [m, k], out [m, n]) from the pack pw;
// r0 is a multiple of 16, r1 too or n. The kernels read x's rows in place.
func bcastRows(out, x []float32, pw *f16Pack, m, n, k, r0, r1 int) {
	if useAVX512 {
		bcastRowsZ(out, x, pw, m, n, k, r0, r1)
		return
	}
	np := bcPanels(n)
	lda := 4 * k
	var tmp [6 * 16]float32 // a tile's outputs in the last, partial panel
	for k0 := 0; k0 < k; k0 += bcKC {
		kb := min(bcKC, k-k0)
		acc := min(k0, 1)
		blk := pw.w[np*16*k0:]
		for nb0 := r0; nb0 < r1; nb0 += bcNB {
			nb1 := min(nb0+bcNB, r1)
			pf := nb0 + (nb1-nb0)&^15 // end of the full panels
			for i0 := 0; i0 < m; i0 += 6 {
				mr := min(6, m-i0)
				a := &x[i0*k+k0]
				if g := (pf - nb0) / 16; g > 0 {
					b, c := &blk[nb0*kb], &out[i0*n+nb0]
					switch mr {
					case 2:
						if g >= 2 {
							bcF16R2P2(a, lda, b, kb, g/2, c, 4*n, acc)
						}
						if g%2 != 0 {
							bcF16R2P1(a, lda, &blk[(pf-16)*kb], kb, 1, &out[i0*n+pf-16], 4*n, acc)
						}
					case 1:
						if g >= 4 {
							bcF16R1P4(a, lda, b, kb, g/4, c, 4*n, acc)
						}
						if g4 := g &^ 3; g4 < g {
							bcF16R1P1(a, lda, &blk[(nb0+16*g4)*kb], kb, g-g4, &out[i0*n+nb0+16*g4], 4*n, acc)
						}
					default:
						bcKernel1[mr](a, lda, b, kb, g, c, 4*n, acc)
					}
				}
				if pf < nb1 {
					nc := nb1 - pf
					for i := 0; i < mr && acc != 0; i++ {
						copy(tmp[16*i:16*i+nc], out[(i0+i)*n+pf:])
					}
					bcKernel1[mr](a, lda, &blk[pf*kb], kb, 1, &tmp[0], 64, acc)
					for i := 0; i < mr; i++ {
						copy(out[(i0+i)*n+pf:(i0+i)*n+nb1], tmp[16*i:16*i+nc])
					}
				}
			}
		}
	}
}

// f16BcastRef is the plain-Go twin of the pack GEMM: out[i, o] (x [m, k], w [n, k] F16
// values) is the chain of float32 FMAs over the columns in order, from 0.
func f16BcastRef(out, x []float32, w []uint16, m, n, k int) {
	wf := make([]float32, k)
	for o := 0; o < n; o++ {
		for c := range wf {
			wf[c] = tensor.F16ToF32(w[o*k+c])
		}
		for i := 0; i < m; i++ {
			var s float32
			for c, v := range x[i*k : i*k+k] {
				s = fmaRound32(v, wf[c], s)
			}
			out[i*n+o] = s
		}
	}
}

// fmaRound32 is a*b + c rounded once to float32 (VFMADD231PS): the product is exact in float64,
// the sum is rounded to odd in float64 (its 53 bits leave room for a correct second rounding
// to float32's 24), then rounded to float32.
func fmaRound32(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b))
	cc := float64(c)
	s := p + cc
	// TwoSum: e is the exact error of s.
	bv := s - p
	e := (p - (s - bv)) + (cc - bv)
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Copysign(math.Inf(1), e))
	}
	return float32(s)
}
