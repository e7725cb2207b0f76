// This file implements the four-stream decode for MatMulEach's segments (each weight with its
// own token: a mixture of experts' down matrices), which gemvStreams cannot take since its
// four streams of a kernel call share one token. Here every worker gets the same fraction of
// every segment (so equal bytes even when the segments' rows differ in length, as an expert's
// down row of 768 and the shared expert's of 2048 do), read as four quarters side by side with
// the segment's own token; a worker done with its shares steals row groups from the back of
// the others'. Rows are those of rows4P, bit for bit the 64-row chunks' rows4Z and rows4ZTail.
package kernels

import (
	"sync"

	"github.com/llmcloud/llmcloud/tensor"
)

// useEachStreams selects eachStreams for MatMulEach (benchmarks compare it with the 64-row
// chunks of gemvSegs).
var useEachStreams = true

// eachStreamsEligible reports whether segs (each with its own token) run as eachStreams: all
// Q8_0 with an even number of blocks per row on the VNNI four-stream kernel.
func eachStreamsEligible(segs []gemvSeg) bool {
	if !useStreams || !useEachStreams || !gemvVNNI() || !useRows4 {
		return false
	}
	for i := range segs {
		s := &segs[i]
		if s.dt != tensor.Q8_0 || (s.k/32)%2 != 0 || s.a8 == nil {
			return false
		}
	}
	return true
}

// eachStreams is the state of one eachStreams job: shares[w·len(segs)+i] is worker w's share of
// segment i (rows of that segment), ranges the same shares' row groups not yet taken.
type eachStreams struct {
	segs   []gemvSeg
	shares []streamShare
	ranges []stealRange
	ptrs   []streamPtrs
	parts  int
	run    func(lo, hi int)
}

var eachStreamsPool = sync.Pool{New: func() any {
	e := &eachStreams{}
	e.run = e.work
	return e
}}

// gemvEachStreams computes every row of segs (eachStreamsEligible, prepped) on p.
func gemvEachStreams(p *Pool, segs []gemvSeg) {
	total := 0
	for i := range segs {
		total += segs[i].n
	}
	parts := min(p.Workers(), max(1, total/(4*streamStep)))
	e := eachStreamsPool.Get().(*eachStreams)
	e.segs, e.parts = segs, parts
	ns := len(segs)
	e.shares = grow(e.shares, parts*ns)
	if cap(e.ranges) < parts*ns {
		e.ranges = make([]stealRange, parts*ns)
	}
	e.ranges = e.ranges[:parts*ns]
	e.ptrs = grow(e.ptrs, parts)
	for w := 0; w < parts; w++ {
		for i := range segs {
			n := segs[i].n
			lo, hi := w*n/parts, (w+1)*n/parts
			sh := streamShare{lo: lo, s: (hi - lo) / 4, hi: hi}
			e.shares[w*ns+i] = sh
			e.ranges[w*ns+i].Store(uint64(sh.s))
		}
	}
	p.For(parts, 1, e.run)
	e.segs = nil
	eachStreamsPool.Put(e)
}

// work runs parts [lo, hi): each part's own shares front to back (and their rest rows), then
// row groups stolen from the back of the other parts' shares.
func (e *eachStreams) work(lo, hi int) {
	ns := len(e.segs)
	for w := lo; w < hi; w++ {
		for i := range e.segs {
			j := w*ns + i
			for g0, g1, ok := takeGuided(&e.ranges[j].Uint64, streamStep, false); ok; g0, g1, ok = takeGuided(&e.ranges[j].Uint64, streamStep, false) {
				e.groups(lo, i, e.shares[j], g0, g1)
			}
			if sh := e.shares[j]; sh.lo+4*sh.s < sh.hi {
				s := &e.segs[i]
				s.rows(s.a8, nil, sh.lo+4*sh.s, sh.hi)
			}
		}
	}
	for d := 1; d < e.parts; d++ {
		w := (lo + d) % e.parts
		for i := range e.segs {
			j := w*ns + i
			for g0, g1, ok := takeGuided(&e.ranges[j].Uint64, streamStep, true); ok; g0, g1, ok = takeGuided(&e.ranges[j].Uint64, streamStep, true) {
				e.groups(lo, i, e.shares[j], g0, g1)
			}
		}
	}
}

// groups computes row groups [g0, g1) of share sh of segment i with the segment's token.
func (e *eachStreams) groups(part, i int, sh streamShare, g0, g1 int) {
	s, ps := &e.segs[i], &e.ptrs[part]
	rs := s.k / 32 * 34
	for j := 0; j < 4; j++ {
		r := sh.lo + j*sh.s + g0
		ps.ws[j], ps.outs[j] = &s.w[r*rs], &s.out[r]
	}
	a8 := s.a8
	rows4P(&ps.ws[0], rs, g1-g0, &a8.qs[0], &a8.dz[0], &a8.fz[0], s.k/64, &ps.outs[0], 4)
}
