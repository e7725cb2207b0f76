// This file holds the AVX2 (no VNNI) side of the four-stream decode (gemvStreams): the kernels
// q8_0Rows4A and q4_0Rows4A take four row pointers like the VNNI ones, but compute each row
// with q8_0Rows's and q4_0Rows's math (token in its plain or block-pair layout), so the rows
// outside the quarters can go through those one-row-at-a-time kernels with the same sums.
package kernels

import (
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// rows4A is the four-stream AVX2 Q8_0 decode kernel (q8_0Rows4A where installed, else its twin
// rows4AGo): nrows groups, row j of group i at w[j] + i·adv bytes, its result at out[j] + i·oadv
// bytes, each row's result bit for bit q8Rows's. q4Rows4A is the same for Q4_0 rows in
// block-pair layout (q4_0Rows4A, else q4Rows4AGo), each result bit for bit q4Rows's.
var rows4A, q4Rows4A = rows4AGo, q4Rows4AGo

func rows4AGo(w **byte, adv int, nrows int, xq *int8, xd *float32, nb int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, nb*34, func(row []byte, o []float32) {
		q8RowsRef(row, 0, 1, unsafe.Slice(xq, nb*32), unsafe.Slice(xd, nb), nb, o)
	})
}

func q4Rows4AGo(w **byte, adv int, nrows int, x2 *int8, d2 *float32, c2 *int32, np int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, np*36, func(row []byte, o []float32) {
		q4RowsRef(row, 0, 1, unsafe.Slice(x2, np*64), unsafe.Slice(d2, np*8), unsafe.Slice(c2, np*8), np, o)
	})
}

// streamsAVX2 reports whether gemvStreams runs segs on the AVX2 kernels: no VNNI, the AVX2
// kernels installed, all Q8_0 or all Q4_0 with an even number of blocks per row.
func streamsAVX2(segs []gemvSeg) bool {
	if quantVNNI || !quantAsm {
		return false
	}
	for i := range segs {
		switch {
		case segs[i].dt != segs[0].dt:
			return false
		case segs[i].dt == tensor.Q8_0:
		case segs[i].dt == tensor.Q4_0 && segs[i].k/32%2 == 0:
		default:
			return false
		}
	}
	return true
}

// groupsAVX2 runs the AVX2 four-stream kernel of segs on the pointers in ps (see groups).
func groupsAVX2(segs []gemvSeg, a8 *q8Acts, ps *streamPtrs, rs, n int) {
	k := segs[0].k
	if segs[0].dt == tensor.Q4_0 {
		q4Rows4A(&ps.ws[0], rs, n, &a8.x2[0], &a8.d2[0], &a8.c2[0], k/64, &ps.outs[0], 4)
	} else {
		rows4A(&ps.ws[0], rs, n, &a8.qs[0], &a8.d[0], k/32, &ps.outs[0], 4)
	}
}
