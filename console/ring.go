package console

import (
	"slices"
	"sync"
)

// Ring keeps the last MaxLimit finished requests. Add is one short critical section copying a
// Trace into a fixed array (no allocation), so a replica pays nothing measurable per request
// whether or not anyone reads the ring.
type Ring struct {
	mu    sync.Mutex
	buf   [MaxLimit]Trace
	next  int   // index of the next write
	total int64 // traces ever added
}

// Add records a finished request.
func (r *Ring) Add(t Trace) {
	r.mu.Lock()
	r.buf[r.next] = t
	r.next = (r.next + 1) % len(r.buf)
	r.total++
	r.mu.Unlock()
}

// Total is the number of traces ever added (finished requests since start).
func (r *Ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Last returns the newest n traces, newest first (fewer when fewer were added).
func (r *Ring) Last(n int) []Trace {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, len(r.buf), int(min(r.total, int64(len(r.buf)))))
	out := make([]Trace, 0, max(n, 0))
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}

// Merge joins lists of traces (from several replicas) into the newest n, newest first by
// finish time.
func Merge(n int, lists ...[]Trace) []Trace {
	var all []Trace
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortStableFunc(all, func(a, b Trace) int {
		switch fa, fb := a.finishUnix(), b.finishUnix(); {
		case fa > fb:
			return -1
		case fa < fb:
			return 1
		}
		return 0
	})
	if len(all) > n {
		all = all[:n]
	}
	if all == nil {
		all = []Trace{}
	}
	return all
}
