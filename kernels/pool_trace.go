// This file is the Pool's optional tracer: when one is set, every part of a parallel job (the
// sub-range a worker, or the caller, ran inside For) is reported with the worker that ran it
// and its start and end, so a profiler can draw each worker's share of an op on that worker's
// track. Off (the default), For pays one atomic load per job and each part one nil check.
package kernels

import "time"

// PoolTracer receives the parts of a Pool's parallel jobs. worker is 0 for the goroutine that
// called For (its own part and the parts it took over) and 1..Workers()-1 for the pool's
// goroutines; each worker's calls come from one goroutine, in order. Jobs that For runs whole
// on the caller (one part, or the pool busy) are not reported.
type PoolTracer interface {
	PoolPart(worker int, start, end time.Time)
}

type tracerRef struct{ t PoolTracer }

// SetTracer makes t receive every part of p's parallel jobs from the next job on; nil turns
// tracing off.
func (p *Pool) SetTracer(t PoolTracer) {
	if t == nil {
		p.tracer.Store(nil)
		return
	}
	p.tracer.Store(&tracerRef{t})
}

// run runs fn(lo, hi) as worker w's part and reports it.
func (r *tracerRef) run(w int, fn func(lo, hi int), lo, hi int) {
	t0 := time.Now()
	fn(lo, hi)
	r.t.PoolPart(w, t0, time.Now())
}
