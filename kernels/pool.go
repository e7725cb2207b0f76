// This file implements Pool: a small set of persistent worker goroutines that split a range
// of independent work items (matrix rows, attention heads) between CPU cores.
package kernels

import (
	"runtime"
	"sync"
)

// Pool runs range-splitting jobs on a fixed number of persistent goroutines. The calling
// goroutine takes the first share itself. A Pool with one worker runs everything inline (the
// single-threaded reference path). Pools are safe for concurrent use.
type Pool struct {
	workers int
	jobs    chan job
}

type job struct {
	fn     func(lo, hi int)
	lo, hi int
	wg     *sync.WaitGroup
}

// NewPool starts a pool with n workers (n < 1 means 1). Its goroutines live for the life of
// the process.
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{workers: n, jobs: make(chan job, 4*n)}
	for i := 1; i < n; i++ {
		go func() {
			for j := range p.jobs {
				j.fn(j.lo, j.hi)
				j.wg.Done()
			}
		}()
	}
	return p
}

// Default uses every CPU the Go scheduler may use.
var Default = NewPool(runtime.GOMAXPROCS(0))

// Serial is the single-threaded reference pool.
var Serial = NewPool(1)

// Workers is the number of goroutines (including the caller) a job is split across.
func (p *Pool) Workers() int { return p.workers }

// For calls fn on consecutive sub-ranges [lo, hi) covering [0, n), in parallel, and returns
// when all have finished. Ranges smaller than minChunk items are not split further.
func (p *Pool) For(n, minChunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := p.workers
	if minChunk < 1 {
		minChunk = 1
	}
	if c := n / minChunk; c < parts {
		parts = max(c, 1)
	}
	if parts == 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Add(parts - 1)
	for i := 1; i < parts; i++ {
		p.jobs <- job{fn: fn, lo: i * n / parts, hi: (i + 1) * n / parts, wg: &wg}
	}
	fn(0, n/parts)
	wg.Wait()
}
