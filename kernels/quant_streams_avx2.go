// This file holds the AVX2 (no VNNI) side of the four-stream decode (gemvStreams): the kernels
// q8_0Rows4A and q4_0Rows4A take four row pointers like the VNNI ones, and sum and transpose
// the four rows' integer lanes so that the float work of a block pair is done once for four
// rows (q8Row4ARef, q4Row4ARef); since a row's lanes never mix with another row's, a row alone
// is computed by the same kernel on a group padded with copies of it (rowsA), and so are the
// 64-row chunks.
package kernels

import (
	"math"
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// rows4A is the four-stream AVX2 Q8_0 decode kernel (q8_0Rows4A where installed, else its twin
// rows4AGo): nrows groups, row j of group i at w[j] + i·adv bytes, its result at out[j] + i·oadv
// bytes, against a token's values and its scales in pair layout (d2). q4Rows4A is the same
// for Q4_0 rows against a token in block-pair layout (q4_0Rows4A, else q4Rows4AGo). A row's
// result does not depend on the other rows of its group.
var rows4A, q4Rows4A = rows4AGo, q4Rows4AGo

func rows4AGo(w **byte, adv int, nrows int, xq *int8, d2 *float32, np int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, np*68, func(row []byte, o []float32) {
		o[0] = q8Row4ARef(row, unsafe.Slice(xq, np*64), unsafe.Slice(d2, np*8), np)
	})
}

// q8Row4ARef is the reference for one row of q8_0Rows4A: per block 2i+h the exact integer
// dot product is converted, multiplied by the row's scale and fused-multiply-added with the
// token scale d2[8i+4h] into one of two accumulators (even, odd blocks), added at the end.
func q8Row4ARef(row []byte, xq []int8, d2 []float32, np int) float32 {
	var acc [2]float32
	for b := 0; b < 2*np; b++ {
		blk := row[34*b : 34*b+34]
		var sum int32
		for j := 0; j < 32; j++ {
			sum += int32(int8(blk[2+j])) * int32(xq[32*b+j])
		}
		t := float32(sum) * f16(blk)
		acc[b%2] = float32(math.FMA(float64(t), float64(d2[4*b]), float64(acc[b%2])))
	}
	return acc[0] + acc[1]
}

func q4Rows4AGo(w **byte, adv int, nrows int, x2 *int8, d2 *float32, c2 *int32, np int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, np*36, func(row []byte, o []float32) {
		o[0] = q4Row4ARef(row, unsafe.Slice(x2, np*64), unsafe.Slice(d2, np*8), unsafe.Slice(c2, np*8), np)
	})
}

// q4Row4ARef is the reference for one row of q4_0Rows4A: per block pair i and block h of it,
// the exact integer sum (nibbles times token, plus the correction c2[8i+4h]) is converted,
// multiplied by the row's scale and fused-multiply-added with the token scale d2[8i+4h] into
// one of two accumulators (even, odd blocks), which are added at the end.
func q4Row4ARef(row []byte, x2 []int8, d2 []float32, c2 []int32, np int) float32 {
	var acc [2]float32
	for i := 0; i < np; i++ {
		x := x2[64*i : 64*i+64]
		for h := 0; h < 2; h++ {
			blk := row[36*i+18*h : 36*i+18*h+18]
			sum := c2[8*i+4*h]
			for j := 0; j < 16; j++ {
				sum += int32(blk[2+j]&0xf)*int32(x[16*h+j]) + int32(blk[2+j]>>4)*int32(x[32+16*h+j])
			}
			t := float32(sum) * f16(blk)
			acc[h] = float32(math.FMA(float64(t), float64(d2[8*i+4*h]), float64(acc[h])))
		}
	}
	return acc[0] + acc[1]
}

// ptrsPool holds the pointer arrays of rowsA calls made outside gemvStreams.
var ptrsPool = sync.Pool{New: func() any { return new(streamPtrs) }}

// rowsA computes rows [lo, hi) of the Q8_0 or Q4_0 weight w (rs bytes per row, an even number
// of blocks) against the token in a8 (d2, and for Q4_0 the block-pair layout) with rows4A or
// q4Rows4A: groups of four consecutive rows, then the last one to three rows as one group
// padded with copies of the last row. ps holds the kernel's pointers.
func rowsA(ps *streamPtrs, dt tensor.DType, w []byte, rs, lo, hi int, a8 *q8Acts, np int, out []float32) {
	call := func(adv, n, oadv int) {
		if dt == tensor.Q4_0 {
			q4Rows4A(&ps.ws[0], adv, n, &a8.x2[0], &a8.d2[0], &a8.c2[0], np, &ps.outs[0], oadv)
		} else {
			rows4A(&ps.ws[0], adv, n, &a8.qs[0], &a8.d2[0], np, &ps.outs[0], oadv)
		}
	}
	if n4 := (hi - lo) / 4; n4 > 0 {
		for j := 0; j < 4; j++ {
			ps.ws[j], ps.outs[j] = &w[(lo+j)*rs], &out[lo+j]
		}
		call(4*rs, n4, 16)
		lo += 4 * n4
	}
	if lo < hi {
		for j := 0; j < 4; j++ {
			r := min(lo+j, hi-1)
			ps.ws[j], ps.outs[j] = &w[r*rs], &out[r]
		}
		call(rs, 1, 4)
	}
}

// streamsAVX2 reports whether gemvStreams runs segs on the AVX2 kernels: the AVX2 kernels
// installed, and no VNNI (all Q8_0 or all Q4_0 with an even number of blocks per row) or, VNNI
// or not, all Q4_K or all Q6_K with useRowsK.
func streamsAVX2(segs []gemvSeg) bool {
	if gemvVNNI() && !isK(segs[0].dt) || !quantAsm {
		return false
	}
	for i := range segs {
		switch {
		case segs[i].dt != segs[0].dt:
			return false
		case (segs[i].dt == tensor.Q8_0 || segs[i].dt == tensor.Q4_0) && segs[i].k/32%2 == 0:
		case isK(segs[i].dt) && useRowsK():
		default:
			return false
		}
	}
	return true
}

// groupsAVX2 runs the AVX2 four-stream kernel of segs on the pointers in ps (see groups).
func groupsAVX2(segs []gemvSeg, a8 *q8Acts, ak *q8KActs, ps *streamPtrs, rs, n int) {
	k := segs[0].k
	if isK(segs[0].dt) {
		callRowsK(ps, segs[0].dt == tensor.Q6_K, ak, rs, n, k/256, 4)
	} else if segs[0].dt == tensor.Q4_0 {
		q4Rows4A(&ps.ws[0], rs, n, &a8.x2[0], &a8.d2[0], &a8.c2[0], k/64, &ps.outs[0], 4)
	} else {
		rows4A(&ps.ws[0], rs, n, &a8.qs[0], &a8.d2[0], k/64, &ps.outs[0], 4)
	}
}
