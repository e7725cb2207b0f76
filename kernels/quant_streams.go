// This file implements the four-stream split of the Q8_0 decode rows (gemvStreams): each
// worker's contiguous share of the rows is cut into four quarters, and the worker walks the
// four quarters side by side, one row of each per step of q8_0Rows4P. Every quarter is then
// one long sequential read, which the hardware prefetcher follows by itself; four consecutive
// rows per step (q8_0Rows4Z over 64-row chunks) are four short streams that it re-learns every
// group. On the Zen 5 host (BenchmarkQ8DecodeHuge, TinyLlama's shapes from DRAM) one thread
// streams 33-36 GB/s of weights this way against 24-29 GB/s for the 64-row chunks, two threads
// 62-71 against 46-55 GB/s. The steps of a share are handed out by
// stealRange as forStealing's items are: front to back by the owner, from the back by a worker
// that has finished its own.
package kernels

import (
	"sync/atomic"
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

// streamStep is the fewest row groups (of four rows, one per stream) a take hands out.
const streamStep = 4

func rows4PGo(w **byte, adv int, nrows int, xs *int8, xd *float32, fz *float32, nu int, out **float32, oadv int) {
	ws, outs := unsafe.Slice(w, 4), unsafe.Slice(out, 4)
	for i := 0; i < nrows; i++ {
		for j := 0; j < 4; j++ {
			row := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(ws[j]), i*adv)), nu*68)
			o := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(outs[j]), i*oadv)), 1)
			rows4ZRef(row, 0, 1, unsafe.Slice(xs, nu*64), unsafe.Slice(xd, nu*16), unsafe.Slice(fz, nu*16), nu, o)
		}
	}
}

func q4Rows4PGo(w **byte, adv int, nrows int, xs *int8, xd *float32, corr *int32, nu int, out **float32, oadv int) {
	ws, outs := unsafe.Slice(w, 4), unsafe.Slice(out, 4)
	for i := 0; i < nrows; i++ {
		for j := 0; j < 4; j++ {
			row := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(ws[j]), i*adv)), nu*72)
			o := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(outs[j]), i*oadv)), 1)
			rowsZRef(true, row, 0, 1, unsafe.Slice(xs, nu*128), unsafe.Slice(xd, nu*16), unsafe.Slice(corr, nu*16), nu, o)
		}
	}
}

// streamsEligible reports whether gemvStreams handles segs, on the VNNI kernels: all Q8_0 with
// an even number of blocks per row, or all Q4_0 with a multiple of 4.
func streamsEligible(segs []gemvSeg) bool {
	if !useStreams || !quantVNNI {
		return false
	}
	for i := range segs {
		nb := segs[i].k / 32
		switch {
		case segs[i].dt != segs[0].dt:
			return false
		case segs[i].dt == tensor.Q8_0 && nb%2 == 0 && useRows4:
		case segs[i].dt == tensor.Q4_0 && nb%4 == 0:
		default:
			return false
		}
	}
	return true
}

// streamShare is one worker's share of the rows: [lo, lo+4·s) as four quarters of s rows, then
// the rest rows [lo+4·s, hi) that do not fill a group.
type streamShare struct{ lo, s, hi int }

// gemvStreams computes rows [0, total) of segs (streamsEligible, prepped) for the token in a8.
func gemvStreams(p *Pool, segs []gemvSeg, a8 *q8Acts, total int) {
	ptrs := make([]streamPtrs, p.Workers()) // the kernel's pointer arrays, one set per part
	forStreams(p, total, func(part int, sh streamShare, g0, g1 int) {
		streamGroups(segs, a8, sh, g0, g1, &ptrs[part])
	}, func(_, lo, hi int) { streamRest(segs, a8, lo, hi) })
}

// forStreams splits rows [0, total) into one contiguous share per worker and each share into
// four quarters (streamShare), and calls groups(part, share, g0, g1) for runs [g0, g1) of the
// share's row groups (row g of each quarter) and rest(part, lo, hi) for the share's rows
// outside its quarters; part is the calling part of the pool job (no two calls with the same
// part run at once). A share's groups go to its own worker front to back in runs of half of
// what is left, and to a worker that has finished its own from the back, a quarter at a time
// (takeGuided).
func forStreams(p *Pool, total int, groups func(part int, sh streamShare, g0, g1 int), rest func(part, lo, hi int)) {
	parts := min(p.Workers(), max(1, total/(4*streamStep)))
	shares := make([]streamShare, parts)
	ranges := make([]stealRange, parts)
	for w := range shares {
		lo, hi := w*total/parts, (w+1)*total/parts
		shares[w] = streamShare{lo: lo, s: (hi - lo) / 4, hi: hi}
		ranges[w].Store(uint64(shares[w].s))
	}
	p.For(parts, 1, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			for g0, g1, ok := takeGuided(&ranges[w].Uint64, streamStep, false); ok; g0, g1, ok = takeGuided(&ranges[w].Uint64, streamStep, false) {
				groups(lo, shares[w], g0, g1)
			}
			if sh := shares[w]; sh.lo+4*sh.s < sh.hi {
				rest(lo, sh.lo+4*sh.s, sh.hi)
			}
		}
		for i := 1; i < parts; i++ {
			w := (lo + i) % parts
			for g0, g1, ok := takeGuided(&ranges[w].Uint64, streamStep, true); ok; g0, g1, ok = takeGuided(&ranges[w].Uint64, streamStep, true) {
				groups(lo, shares[w], g0, g1)
			}
		}
	})
}

// streamGroups computes groups [g0, g1) of share sh: rows sh.lo + j·sh.s + g for the four
// streams j, in runs that keep each stream inside one segment, passing the kernel its row and
// result pointers in ps.
func streamGroups(segs []gemvSeg, a8 *q8Acts, sh streamShare, g0, g1 int, ps *streamPtrs) {
	ws, outs := &ps.ws, &ps.outs
	q4 := segs[0].dt == tensor.Q4_0
	rs := streamRowBytes(segs)
	for g0 < g1 {
		n := g1 - g0
		for j := 0; j < 4; j++ {
			row := sh.lo + j*sh.s + g0
			si, start := segOf(segs, row)
			s := &segs[si]
			n = min(n, start+s.n-row)
			ws[j] = &s.w[(row-start)*rs]
			outs[j] = &s.out[row-start]
		}
		if q4 {
			q4Rows4P(&ws[0], rs, n, &a8.x4[0], &a8.d4[0], &a8.c4[0], segs[0].k/128, &outs[0], 4)
		} else {
			rows4P(&ws[0], rs, n, &a8.qs[0], &a8.dz[0], &a8.fz[0], segs[0].k/64, &outs[0], 4)
		}
		g0 += n
	}
}

// streamPtrs holds the four row and result pointers of one q8_0Rows4P call (allocated with the
// job: as arguments of a call through the rows4P variable, local arrays would escape).
type streamPtrs struct {
	ws   [4]*byte
	outs [4]*float32
}

// streamRest computes rows [lo, hi) one at a time with the one-row kernel of the same math
// (Q8_0: rows4ZTail, Q4_0: rowsZ[1]).
func streamRest(segs []gemvSeg, a8 *q8Acts, lo, hi int) {
	rs := streamRowBytes(segs)
	for r := lo; r < hi; r++ {
		si, start := segOf(segs, r)
		s := &segs[si]
		if s.dt == tensor.Q4_0 {
			rowsZ[1](&s.w[(r-start)*rs], rs, 1, &a8.x4[0], &a8.d4[0], &a8.c4[0], s.k/128, &s.out[r-start])
		} else {
			rows4ZTail(&s.w[(r-start)*rs], rs, 1, &a8.qs[0], &a8.dz[0], &a8.fz[0], s.k/64, &s.out[r-start])
		}
	}
}

// streamRowBytes is the bytes of one row of segs (one type and k, streamsEligible).
func streamRowBytes(segs []gemvSeg) int {
	if segs[0].dt == tensor.Q4_0 {
		return segs[0].k / 32 * 18
	}
	return segs[0].k / 32 * 34
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

// takeGuided claims items from the packed range r: from the front (the owner) half of what
// is left, from the back (a worker stealing) a quarter, at least min items either way (or all
// that is left), and returns them as [lo, hi). Large takes keep the kernel's calls few: each
// call ends the streams' run-ahead: calling the kernel directly on one thread, four groups per
// call streamed 22-27 GB/s where one call per share streamed 33-36.
func takeGuided(r *atomic.Uint64, min_ int, back bool) (int, int, bool) {
	for {
		v := r.Load()
		lo, hi := int(v>>32), int(v&0xffffffff)
		if lo >= hi {
			return 0, 0, false
		}
		k := (hi - lo) / 2
		if back {
			k = (hi - lo) / 4
		}
		k = min(max(k, min_), hi-lo)
		a, b, next := lo, lo+k, uint64(lo+k)<<32|uint64(hi)
		if back {
			a, b, next = hi-k, hi, uint64(lo)<<32|uint64(hi-k)
		}
		if r.CompareAndSwap(v, next) {
			return a, b, true
		}
	}
}
