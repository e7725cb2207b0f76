// This file implements forStreams, the split of a decode matmul's rows that reads each
// worker's share as four streams: the share is cut into four quarters, and a step ("row group")
// takes row g of each quarter, so the worker walks its quarters side by side and each quarter
// is one long sequential read, which the hardware prefetcher follows by itself. Four
// consecutive rows per step are four short streams that it re-learns every group. The groups
// of a share are handed out in guided runs (takeGuided): front to back by the owner, from the
// back by a worker that has finished its own. The split's state is pooled, so a decode matmul
// allocates nothing here.
package kernels

import (
	"sync"
	"sync/atomic"
)

// streamStep is the fewest row groups (of four rows, one per stream) a take hands out.
const streamStep = 4

// streamShare is one worker's share of the rows: [lo, lo+4·s) as four quarters of s rows, then
// the rest rows [lo+4·s, hi) that do not fill a group (with forStreamsN's S streams: S parts of
// s rows, the rest from lo+S·s).
type streamShare struct{ lo, s, hi int }

// streamWork is what forStreams runs: groups computes row groups [g0, g1) of share sh (rows
// sh.lo + j·sh.s + g for the quarters j), rest the share's rows [lo, hi) outside its quarters.
// part is the calling part of the pool job: no two calls with the same part run at once.
type streamWork interface {
	groups(part int, sh streamShare, g0, g1 int)
	rest(part, lo, hi int)
}

// streamSplit is the state of one forStreams job.
type streamSplit struct {
	streams int // streams per share
	shares  []streamShare
	ranges  []stealRange // ranges[w] packs share w's groups not yet taken, lo<<32 | hi
	work    streamWork
	run     func(lo, hi int) // s.parts, bound once
}

var splitPool = sync.Pool{New: func() any {
	s := &streamSplit{}
	s.run = s.parts
	return s
}}

// forStreams splits rows [0, total) into one contiguous share per worker (at most p's workers,
// each share at least 4·streamStep rows) and runs w over them on p (see the file comment).
func forStreams(p *Pool, total int, w streamWork) { forStreamsN(p, total, 4, w) }

// forStreamsN is forStreams with each share cut into streams parts instead of four (a row
// group is then row g of each part; w.groups knows the count).
func forStreamsN(p *Pool, total, streams int, w streamWork) {
	parts := min(p.Workers(), max(1, total/(streams*streamStep)))
	s := splitPool.Get().(*streamSplit)
	s.work, s.streams = w, streams
	s.shares = grow(s.shares, parts)
	if cap(s.ranges) < parts {
		s.ranges = make([]stealRange, parts)
	}
	s.ranges = s.ranges[:parts]
	for i := range s.shares {
		lo, hi := i*total/parts, (i+1)*total/parts
		s.shares[i] = streamShare{lo: lo, s: (hi - lo) / streams, hi: hi}
		s.ranges[i].Store(uint64(s.shares[i].s))
	}
	p.For(parts, 1, s.run)
	s.work = nil
	splitPool.Put(s)
}

// parts runs parts [lo, hi) of the job: each part's own share, then stealing from the others.
func (s *streamSplit) parts(lo, hi int) {
	n := len(s.shares)
	for w := lo; w < hi; w++ {
		for g0, g1, ok := takeGuided(&s.ranges[w].Uint64, streamStep, false); ok; g0, g1, ok = takeGuided(&s.ranges[w].Uint64, streamStep, false) {
			s.work.groups(lo, s.shares[w], g0, g1)
		}
		if sh := s.shares[w]; sh.lo+s.streams*sh.s < sh.hi {
			s.work.rest(lo, sh.lo+s.streams*sh.s, sh.hi)
		}
	}
	for i := 1; i < n; i++ {
		w := (lo + i) % n
		for g0, g1, ok := takeGuided(&s.ranges[w].Uint64, streamStep, true); ok; g0, g1, ok = takeGuided(&s.ranges[w].Uint64, streamStep, true) {
			s.work.groups(lo, s.shares[w], g0, g1)
		}
	}
}

// takeGuided claims items from the packed range r: from the front (the owner) half of what
// is left, from the back (a worker stealing) a quarter, at least min_ items either way (or all
// that is left), and returns them as [lo, hi). Large takes keep the kernel's calls few, since
// each call ends the streams' run-ahead: calling the Q8_0 kernel directly on one thread, four
// groups per call streamed 22-27 GB/s where one call per share streamed 33-36.
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
