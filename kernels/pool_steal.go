// This file implements forStealing: items split into one contiguous range per worker, each
// worker taking its own range front to back, and a worker that runs out taking items from the
// back of the others' ranges. A decode GEMV so reads one long sequential stream of weight rows
// per worker (what the hardware prefetcher follows best, as the float GEMV's static split
// does), while a worker slowed down by other processes still hands its tail to the others (as
// forDynamic does, whose shared counter interleaves the workers' chunks across the matrix).
package kernels

import "sync/atomic"

// forStealing calls fn(c) exactly once for every c in [0, n) on p's workers (see the file
// comment).
func forStealing(p *Pool, n int, fn func(c int)) {
	parts := min(p.Workers(), n)
	if parts <= 1 {
		for c := 0; c < n; c++ {
			fn(c)
		}
		return
	}
	// ranges[w] packs worker w's remaining items [lo, hi) as lo<<32 | hi.
	ranges := make([]stealRange, parts)
	for w := range ranges {
		ranges[w].Store(uint64(w*n/parts)<<32 | uint64((w+1)*n/parts))
	}
	p.For(parts, 1, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			for c, ok := take(&ranges[w].Uint64, false); ok; c, ok = take(&ranges[w].Uint64, false) {
				fn(c)
			}
		}
		// Steal from the back of the other ranges, the next one first.
		for i := 1; i < parts; i++ {
			v := &ranges[(lo+i)%parts].Uint64
			for c, ok := take(v, true); ok; c, ok = take(v, true) {
				fn(c)
			}
		}
	})
}

// stealRange is one worker's packed range alone on its cache lines (128 bytes: the adjacent-line
// prefetcher pulls 64-byte lines in pairs), so that workers taking items from their own ranges,
// one compare-and-swap per item, do not bounce one line between their cores.
type stealRange struct {
	atomic.Uint64
	_ [120]byte
}

// take claims the first (or, with back, the last) item of the packed range r.
func take(r *atomic.Uint64, back bool) (int, bool) {
	for {
		v := r.Load()
		lo, hi := v>>32, v&0xffffffff
		if lo >= hi {
			return 0, false
		}
		c, next := lo, (lo+1)<<32|hi
		if back {
			c, next = hi-1, lo<<32|(hi-1)
		}
		if r.CompareAndSwap(v, next) {
			return int(c), true
		}
	}
}
