// This file implements dynItems, forDynamic's allocation-free form for a runner that keeps
// one: the workers take items one at a time from a shared counter, so work items of unequal
// cost (prefill attention's tiles: a late tile of a prompt attends to many more positions than
// an early one) end the job nearly together, and a worker the OS has descheduled leaves its
// items to the others instead of holding up the job with a fixed half of them.
package kernels

import "sync/atomic"

// dynItems is the state of one dynamic job; keep one per runner (not used concurrently).
type dynItems struct {
	next atomic.Int64
	n    int
	item func(lo, hi int) // runs items [lo, hi); called with hi = lo+1
	run  func(lo, hi int) // d.parts, bound once
}

// For calls item(c, c+1) exactly once for every c in [0, n) on p's workers.
func (d *dynItems) For(p *Pool, n int, item func(lo, hi int)) {
	if d.run == nil {
		d.run = d.parts
	}
	d.n, d.item = n, item
	d.next.Store(0)
	p.For(min(p.Workers(), n), 1, d.run)
	d.item = nil
}

// parts is one pool part: take items until none is left.
func (d *dynItems) parts(_, _ int) {
	for c := int(d.next.Add(1) - 1); c < d.n; c = int(d.next.Add(1) - 1) {
		d.item(c, c+1)
	}
}
