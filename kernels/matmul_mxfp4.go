// This file is the MXFP4 matmul (tensor/mxfp4.go: gpt-oss's expert weights): out = x · wᵀ with
// w's rows decoded block by block, never the whole matrix. One input row (decode): each block's
// 32 nibbles are looked up as small integers, dotted with x's 32 values and scaled once by the
// block's power of two. More rows: a weight row is decoded once into float32 and dotted with
// every input row.
package kernels

import (
	"github.com/llmcloud/llmcloud/tensor"
)

// mxfp4Lut are the doubled E2M1 values as float32.
var mxfp4Lut = func() (l [16]float32) {
	for i, v := range tensor.MXFP4Values {
		l[i] = float32(v)
	}
	return l
}()

// mxfp4Dot is Σ x_i w_i over one row of k values (k a multiple of 32).
func mxfp4Dot(row []byte, x []float32) float32 {
	var sum float32
	for b := 0; b < len(x)/32; b++ {
		blk := row[b*17 : b*17+17]
		xb := x[b*32 : b*32+32]
		var s0, s1 float32
		for j := 0; j < 16; j++ {
			q := blk[1+j]
			s0 += mxfp4Lut[q&0xf] * xb[j]
			s1 += mxfp4Lut[q>>4] * xb[16+j]
		}
		sum += (s0 + s1) * tensor.MXFP4HalfScale(blk[0])
	}
	return sum
}

// mxfp4Row decodes one row into dst.
func mxfp4Row(row []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := row[b*17 : b*17+17]
		d := tensor.MXFP4HalfScale(blk[0])
		out := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[1+j]
			out[j] = mxfp4Lut[q&0xf] * d
			out[j+16] = mxfp4Lut[q>>4] * d
		}
	}
}

func matmulMXFP4(p *Pool, out, x []float32, w []byte, m, n, k int) {
	rb := k / 32 * 17
	if m == 1 {
		p.For(n, 16, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				out[r] = mxfp4Dot(w[r*rb:(r+1)*rb], x[:k])
			}
		})
		return
	}
	p.For(n, 4, func(lo, hi int) {
		buf := make([]float32, k)
		for r := lo; r < hi; r++ {
			mxfp4Row(w[r*rb:(r+1)*rb], buf)
			for i := 0; i < m; i++ {
				out[i*n+r] = Dot(x[i*k:(i+1)*k], buf)
			}
		}
	})
}
