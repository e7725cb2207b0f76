// This file holds the AVX2 (no VNNI) four-row decode of Q4_K and Q6_K weights: the kernels
// q4KRows4A and q6KRows4A (kernels/internal/asmgen/krows) take four row pointers like the Q8_0
// and Q4_0 ones (quant_streams_avx2.go), do each row's integer work as the one-row dots and
// fold the four rows' sums into one register, so the float work of a super-block runs once for
// four rows. q4KRow4ARef and q6KRow4ARef are their plain-Go twins (installed elsewhere). A row's
// result does not depend on the rows beside it: rowsK pads a lone row with copies of itself.
package kernels

import (
	"math"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// rowsKFunc is a four-stream K-quant decode kernel: nrows groups, row j of group i at
// w[j] + i·adv bytes, its result at out[j] + i·oadv bytes, against one Q8_K token (values xq,
// scales xd, and bs: bsum8 for Q4_K, bsums for Q6_K) over nb super-blocks.
type rowsKFunc = func(w **byte, adv int, nrows int, xq *int8, xd *float32, bs *int16, nb int, out **float32, oadv int)

// rows4K holds the Q4_K and Q6_K four-row kernels (assembly where the CPU has AVX2, see
// quant_krows_amd64.go; else the Go twins, which decode does not use: useRowsK).
var rows4K = [2]rowsKFunc{q4KRows4AGo, q6KRows4AGo}

// rowsKAsm is set when rows4K holds the assembly kernels; useRowsK4 switches them off (for
// benchmarks against the one-row dots).
var rowsKAsm, useRowsK4 = false, true

// useRowsK reports whether K-quant decode rows run rows4K: wherever the AVX2 kernels are
// installed, VNNI or not. On the Sapphire Rapids VM (AVX-512 VNNI) they streamed 30-37% more
// Q4_K and 17-21% more Q6_K bytes than the VNNI one-row tile (BenchmarkQuantGEMV, /vnnitile
// rows), so the tile runs decode only in batch-invariant mode (MatMulInvariant), where a lone
// row must sum as the batched tiles do.
func useRowsK() bool { return rowsKAsm && useRowsK4 && quantAsm }

func q4KRows4AGo(w **byte, adv int, nrows int, xq *int8, xd *float32, bs *int16, nb int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, nb*144, func(row []byte, o []float32) {
		o[0] = q4KRow4ARef(row, unsafe.Slice(xq, nb*256), unsafe.Slice(xd, nb), unsafe.Slice(bs, nb*8), nb)
	})
}

func q6KRows4AGo(w **byte, adv int, nrows int, xq *int8, xd *float32, bs *int16, nb int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, nb*210, func(row []byte, o []float32) {
		o[0] = q6KRow4ARef(row, unsafe.Slice(xq, nb*256), unsafe.Slice(xd, nb), unsafe.Slice(bs, nb*16), nb)
	})
}

// q4KRow4ARef is the reference for one row of q4KRows4A: per super-block the exact integer sum
// S = Σ_j sc_j·Σ q4·q8 and the min sum M = Σ_j m_j·bsum8_j are converted and fused-multiply-
// added with d·dx and dmin·dx (each rounded to float32) into two accumulators; the result is
// their difference.
func q4KRow4ARef(row []byte, xq []int8, xd []float32, bsum8 []int16, nb int) float32 {
	var accS, accM float32
	for b := 0; b < nb; b++ {
		blk := row[b*144 : b*144+144]
		x := xq[b*256 : b*256+256]
		sc, mn := scalesQ4K(blk[4:16])
		var s, m int32
		for j := 0; j < 8; j++ {
			m += mn[j] * int32(bsum8[b*8+j])
		}
		for c := 0; c < 4; c++ {
			q := blk[16+32*c : 48+32*c]
			for j := 0; j < 32; j++ {
				s += sc[2*c]*int32(q[j]&0xf)*int32(x[64*c+j]) + sc[2*c+1]*int32(q[j]>>4)*int32(x[64*c+32+j])
			}
		}
		fd := float32(f16(blk) * xd[b])
		fm := float32(f16(blk[2:]) * xd[b])
		accS = float32(math.FMA(float64(float32(s)), float64(fd), float64(accS)))
		accM = float32(math.FMA(float64(float32(m)), float64(fm), float64(accM)))
	}
	return accS - accM
}

// q6KRow4ARef is the reference for one row of q6KRows4A: per super-block the exact integer sums
// of the dot's lanes 0..3 and 4..7 (dotQ6KRef's lanes, corrections included) are converted and
// fused-multiply-added with d·dx (rounded to float32) into two accumulators, added at the end.
func q6KRow4ARef(row []byte, xq []int8, xd []float32, bsums []int16, nb int) float32 {
	var acc [2]float32
	for b := 0; b < nb; b++ {
		blk := row[b*210 : b*210+210]
		x := xq[b*256 : b*256+256]
		sc := blk[192:208]
		var half [2]int32
		for l := 0; l < 8; l++ {
			half[l/4] -= 32 * (int32(int8(sc[2*l]))*int32(bsums[b*16+2*l]) + int32(int8(sc[2*l+1]))*int32(bsums[b*16+2*l+1]))
		}
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 160+32*h]
			for j := 0; j < 32; j++ {
				q := [4]int32{
					int32(ql[j]&0xf | (qh[j]&3)<<4),
					int32(ql[j+32]&0xf | (qh[j]>>2&3)<<4),
					int32(ql[j]>>4 | (qh[j]>>4&3)<<4),
					int32(ql[j+32]>>4 | (qh[j]>>6&3)<<4),
				}
				for i := 0; i < 4; i++ {
					g := 8*h + 2*i + j/16
					half[j/16] += int32(int8(sc[g])) * q[i] * int32(x[128*h+32*i+j])
				}
			}
		}
		f := float32(f16(blk[208:]) * xd[b])
		for e := range acc {
			acc[e] = float32(math.FMA(float64(float32(half[e])), float64(f), float64(acc[e])))
		}
	}
	return acc[0] + acc[1]
}

// rowsK computes rows [lo, hi) of a Q4_K (q6 false) or Q6_K weight w (rs bytes per row, nb
// super-blocks) against the token in ak with rows4K: groups of four consecutive rows, then the
// last one to three rows as one group padded with copies of the last row. ps holds the
// kernel's pointers.
func rowsK(ps *streamPtrs, q6 bool, w []byte, rs, lo, hi int, ak *q8KActs, nb int, out []float32) {
	if n4 := (hi - lo) / 4; n4 > 0 {
		for j := 0; j < 4; j++ {
			ps.ws[j], ps.outs[j] = &w[(lo+j)*rs], &out[lo+j]
		}
		callRowsK(ps, q6, ak, 4*rs, n4, nb, 16)
		lo += 4 * n4
	}
	if lo < hi {
		for j := 0; j < 4; j++ {
			r := min(lo+j, hi-1)
			ps.ws[j], ps.outs[j] = &w[r*rs], &out[r]
		}
		callRowsK(ps, q6, ak, rs, 1, nb, 4)
	}
}

// callRowsK runs the Q4_K or Q6_K kernel of rows4K on the pointers in ps.
func callRowsK(ps *streamPtrs, q6 bool, ak *q8KActs, adv, n, nb, oadv int) {
	if q6 {
		rows4K[1](&ps.ws[0], adv, n, &ak.qs[0], &ak.d[0], &ak.bsums[0], nb, &ps.outs[0], oadv)
	} else {
		rows4K[0](&ps.ws[0], adv, n, &ak.qs[0], &ak.d[0], &ak.bsum8[0], nb, &ps.outs[0], oadv)
	}
}

// isK reports whether dt is Q4_K or Q6_K.
func isK(dt tensor.DType) bool { return dt == tensor.Q4_K || dt == tensor.Q6_K }

// matmulKDots computes one token against the K-quant weight w with the one-row dots, one row
// at a time, as the GEMM path (matmulKActs, m > 1) does on AVX2: MatMulInvariant's m == 1,
// since the folded decode kernels sum in another order.
func (p *Pool) matmulKDots(out, x []float32, w *tensor.Tensor) {
	n, k := w.Shape[0], w.Shape[1]
	nb := k / 256
	a := getQ8KActs(1, k)
	defer q8KActPool.Put(a)
	a.quantize(p, x)
	rs, _ := w.Type.RowBytes(k)
	p.For(n, 8, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if w.Type == tensor.Q6_K {
				out[r] = dotQ6K(&w.Data[r*rs], &a.qs[0], &a.d[0], &a.bsums[0], nb)
			} else {
				out[r] = dotQ4K(&w.Data[r*rs], &a.qs[0], &a.d[0], &a.bsum8[0], nb)
			}
		}
	})
}
