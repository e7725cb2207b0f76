// This file implements the four-stream decode of Q8_0 and Q4_0 rows (gemvStreams, on the split
// of pool_streams.go): four row pointers per kernel call (q8_0Rows4P, q4_0Rows4P), one row of
// each quarter of a worker's share. On the Zen 5 host (BenchmarkQ8DecodeHuge, TinyLlama's Q8_0
// shapes from DRAM) one thread streams 33-36 GB/s of weights this way against 24-29 GB/s for
// four consecutive rows over 64-row chunks, two threads 62-71 against 46-55 GB/s. With
// useStreams8 a share is cut into eight parts instead (q8_0Rows8P, q4_0Rows8P:
// quant_streams8.go).
package kernels

import (
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// rows4P is the four-stream Q8_0 decode kernel (q8_0Rows4P where installed, else its twin
// rows4PGo): nrows groups, row j of group i at w[j] + i·adv bytes, its result at out[j] + i·oadv
// bytes. A row's result is bit for bit rows4Z's and rows4ZTail's. q4Rows4P is the same for
// Q4_0 rows (q4_0Rows4P, else q4Rows4PGo), each row's result bit for bit rowsZ[1]'s.
var rows4P, q4Rows4P = rows4PGo, q4Rows4PGo

// useStreams selects gemvStreams for eligible decode rows (benchmarks compare it with the
// 64-row chunks of gemvSegs).
var useStreams = true

func rows4PGo(w **byte, adv int, nrows int, xs *int8, xd *float32, fz *float32, nu int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, nu*68, func(row []byte, o []float32) {
		rows4ZRef(row, 0, 1, unsafe.Slice(xs, nu*64), unsafe.Slice(xd, nu*16), unsafe.Slice(fz, nu*16), nu, o)
	})
}

func q4Rows4PGo(w **byte, adv int, nrows int, xs *int8, xd *float32, corr *int32, nu int, out **float32, oadv int) {
	twin4P(w, adv, nrows, out, oadv, nu*72, func(row []byte, o []float32) {
		rowsZRef(true, row, 0, 1, unsafe.Slice(xs, nu*128), unsafe.Slice(xd, nu*16), unsafe.Slice(corr, nu*16), nu, o)
	})
}

// twin4P walks a four-stream kernel's rows (rowBytes each) and results as the kernel does,
// computing each row with one.
func twin4P(w **byte, adv, nrows int, out **float32, oadv, rowBytes int, one func(row []byte, out []float32)) {
	twinNP(4, w, adv, nrows, out, oadv, rowBytes, one)
}

// twinNP is twin4P for a kernel of streams streams.
func twinNP(streams int, w **byte, adv, nrows int, out **float32, oadv, rowBytes int, one func(row []byte, out []float32)) {
	ws, outs := unsafe.Slice(w, streams), unsafe.Slice(out, streams)
	for i := 0; i < nrows; i++ {
		for j := 0; j < streams; j++ {
			one(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(ws[j]), i*adv)), rowBytes),
				unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(outs[j]), i*oadv)), 1))
		}
	}
}

// streamsEligible reports whether gemvStreams handles segs, on the VNNI kernels: all Q8_0 with
// an even number of blocks per row, or all Q4_0 with a multiple of 4; without VNNI on the AVX2
// kernels (streamsAVX2).
func streamsEligible(segs []gemvSeg) bool {
	if !useStreams {
		return false
	}
	if !gemvVNNI() && segs[0].zc == nil || isK(segs[0].dt) {
		return streamsAVX2(segs)
	}
	for i := range segs {
		nb := segs[i].k / 32
		switch {
		case segs[i].dt != segs[0].dt, (segs[i].zc == nil) != (segs[0].zc == nil):
			return false
		case segs[i].dt == tensor.Q8_0 && nb%2 == 0 && useRows4:
		case segs[i].dt == tensor.Q4_0 && nb%4 == 0:
		default:
			return false
		}
	}
	return true
}

// quantStreams is the streamWork of gemvStreams.
type quantStreams struct {
	segs []gemvSeg
	a8   *q8Acts
	ak   *q8KActs     // the token of Q4_K/Q6_K rows (AVX2, quant_krows.go)
	ptrs []streamPtrs // the kernel's pointer arrays, one set per part
	// streams per share: 4, or 8 for the VNNI Q8_0 and Q4_0 rows with useStreams8
	// (q8_0Rows8P, q4_0Rows8P: quant_streams8.go).
	streams int
}

// streamPtrs holds the row and result pointers of one four- or eight-stream kernel call (kept
// with the job: as arguments of a call through a function variable, local arrays would escape).
type streamPtrs struct {
	ws   [8]*byte
	outs [8]*float32
	zs   [4]*int8 // the streams' zero codes (Q4_0Z, matmul_zero_fused.go)
}

var quantStreamsPool = sync.Pool{New: func() any { return &quantStreams{} }}

// gemvStreams computes rows [0, total) of segs (streamsEligible, prepped) for the token in a8.
func gemvStreams(p *Pool, segs []gemvSeg, a8 *q8Acts, ak *q8KActs, total int) {
	q := quantStreamsPool.Get().(*quantStreams)
	q.segs, q.a8, q.ak, q.ptrs = segs, a8, ak, grow(q.ptrs, p.Workers())
	q.streams = 4
	if streams8(segs) {
		q.streams = 8
	}
	forStreamsN(p, total, q.streams, q)
	q.segs, q.a8, q.ak = nil, nil, nil
	quantStreamsPool.Put(q)
}

// groups computes groups [g0, g1) of share sh in runs that keep each stream inside one segment.
func (q *quantStreams) groups(part int, sh streamShare, g0, g1 int) {
	segs, a8, ps := q.segs, q.a8, &q.ptrs[part]
	rs, _ := segs[0].dt.RowBytes(segs[0].k)
	for g0 < g1 {
		n := g1 - g0
		for j := 0; j < q.streams; j++ {
			row := sh.lo + j*sh.s + g0
			si, start := segOf(segs, row)
			s := &segs[si]
			n = min(n, start+s.n-row)
			ps.ws[j], ps.outs[j] = &s.w[(row-start)*rs], &s.out[row-start]
			if s.zc != nil {
				ps.zs[j] = &s.zc[(row-start)*(s.k/128)]
			}
		}
		if segs[0].zc != nil {
			q4Rows4PZ(&ps.ws[0], &ps.zs[0], n, &a8.zr[0], segs[0].k/128, &ps.outs[0], 4)
		} else if !gemvVNNI() || isK(segs[0].dt) {
			groupsAVX2(segs, a8, q.ak, ps, rs, n)
		} else if q.streams == 8 && segs[0].dt == tensor.Q4_0 {
			q4Rows8P(&ps.ws[0], rs, n, &a8.x4[0], &a8.d4[0], &a8.c4[0], segs[0].k/128, &ps.outs[0], 4)
		} else if q.streams == 8 {
			rows8P(&ps.ws[0], rs, n, &a8.qs[0], &a8.dz[0], &a8.fz[0], segs[0].k/64, &ps.outs[0], 4)
		} else if segs[0].dt == tensor.Q4_0 {
			q4Rows4P(&ps.ws[0], rs, n, &a8.x4[0], &a8.d4[0], &a8.c4[0], segs[0].k/128, &ps.outs[0], 4)
		} else {
			rows4P(&ps.ws[0], rs, n, &a8.qs[0], &a8.dz[0], &a8.fz[0], segs[0].k/64, &ps.outs[0], 4)
		}
		g0 += n
	}
}

// rest computes rows [lo, hi) one at a time with gemvSeg.rows, whose one-row kernels
// (rows4ZTail, rowsZ[1]) give the same sums, or on the AVX2 kernels with rowsA.
func (q *quantStreams) rest(part, lo, hi int) {
	for r := lo; r < hi; r++ {
		si, start := segOf(q.segs, r)
		if s := &q.segs[si]; !gemvVNNI() && s.zc == nil || isK(s.dt) {
			rs, _ := s.dt.RowBytes(s.k)
			if isK(s.dt) {
				rowsK(&q.ptrs[part], s.dt == tensor.Q6_K, s.w, rs, r-start, r-start+1, q.ak, s.k/256, s.out)
				continue
			}
			rowsA(&q.ptrs[part], s.dt, s.w, rs, r-start, r-start+1, q.a8, s.k/64, s.out)
			continue
		}
		q.segs[si].rows(q.a8, nil, r-start, r-start+1)
	}
}

// segOf returns the index of the segment holding row r of the concatenated rows, and the row
// its segment starts at.
func segOf(segs []gemvSeg, r int) (int, int) {
	start := 0
	for i := range segs {
		if r < start+segs[i].n {
			return i, start
		}
		start += segs[i].n
	}
	panic("kernels: row outside the segments")
}
