// This file implements Pool: a small set of persistent worker goroutines that split a range
// of independent work items (matrix rows, attention heads) between CPU cores.
//
// Hand-off is spin-then-block: a job is published to per-worker slots with one atomic store
// each; an idle worker polls its slot (yielding to the Go scheduler every few polls) for
// spinDuration before it parks on a channel, so the ~150 dispatches of a decode step reach
// already-running workers instead of paying a goroutine wake-up (futex, IPI) each. Parts are
// claimed with a compare-and-swap, and the caller claims parts no worker has started once its
// own is done: a worker the OS has not scheduled delays nothing.
package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs range-splitting jobs on a fixed number of persistent goroutines. The calling
// goroutine takes the first share itself. A Pool with one worker runs everything inline (the
// single-threaded reference path). Pools are safe for concurrent use: one job runs at a time,
// and a For that finds the pool busy (another goroutine's job, or a For nested inside a job)
// runs its whole range on the calling goroutine.
type Pool struct {
	workers int
	mu      sync.Mutex // held by the caller of the job in flight
	slots   []poolSlot // slot i holds part i of the job in flight (slot 0: the caller's)
	seq     uint64     // sequence number of the last job (under mu)
	spin    time.Duration
	pending atomic.Int32

	callerSleeping atomic.Bool
	callerWake     chan struct{}

	tracer atomic.Pointer[tracerRef] // nil: off (pool_trace.go)

	bf16 *BF16Weights // non-nil: bf16 mode (gemm_bf16.go)
}

// poolSlot is one part of a job and the worker that prefers it. state is seq<<1 when job seq's
// part is published and unclaimed, seq<<1|1 once claimed; whoever claims a part (its worker, or
// the caller stealing it) reads fn, lo, hi, which the dispatcher rewrites only after the part
// has finished.
type poolSlot struct {
	state    atomic.Uint64
	sleeping atomic.Bool
	wake     chan struct{}
	fn       func(lo, hi int)
	lo, hi   int
	tr       *tracerRef // the job's tracer (nil: off), set with fn
	_        [64]byte   // keep slots on separate cache lines
}

// spinDuration is how long an idle worker (or a caller waiting for its job's last part) polls
// before it parks. Between the matmuls of a forward pass the caller works for microseconds;
// between decode steps for tens of microseconds. Polling longer costs decode speed on an
// oversubscribed host (stories110M F16 tg128 at load average 28, three runs each: 200 µs
// 14.9/35.1/44.0 t/s, 50 µs 20.6/42.9/51.1, no polling 13.3/58.2/61.8).
const spinDuration = 50 * time.Microsecond

// pollsPerYield is how many times a waiting goroutine polls before it yields its P to other
// goroutines (runtime.Gosched takes the scheduler's global lock, which the caller and the
// workers would otherwise contend for on every poll).
const pollsPerYield = 64

// NewPool starts a pool with n workers (n < 1 means 1). Its goroutines live for the life of
// the process. Workers poll only when they do not outnumber GOMAXPROCS (a polling worker
// holds a P, yielding it only between polls).
func NewPool(n int) *Pool {
	if n > runtime.GOMAXPROCS(0) {
		return newPool(n, 0)
	}
	return newPool(n, spinDuration)
}

// newPool is NewPool with the polling time spin.
func newPool(n int, spin time.Duration) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{workers: n, spin: spin, slots: make([]poolSlot, n), callerWake: make(chan struct{}, 1)}
	for i := 1; i < n; i++ {
		p.slots[i].wake = make(chan struct{}, 1)
		go p.worker(i)
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
// when all have finished. Ranges smaller than minChunk items are not split further. The
// sub-ranges depend only on n, minChunk and the pool's size, never on timing.
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
	if parts == 1 || !p.mu.TryLock() {
		fn(0, n)
		return
	}
	p.seq++
	s := p.seq
	tr := p.tracer.Load()
	p.pending.Store(int32(parts))
	for i := 1; i < parts; i++ {
		sl := &p.slots[i]
		sl.fn, sl.lo, sl.hi, sl.tr = fn, i*n/parts, (i+1)*n/parts, tr
		sl.state.Store(s << 1)
		if sl.sleeping.CompareAndSwap(true, false) {
			sl.wake <- struct{}{}
		}
	}
	if tr != nil {
		tr.run(0, fn, 0, n/parts)
	} else {
		fn(0, n/parts)
	}
	done := int32(1)
	// Take over parts whose worker has not started them yet.
	for i := 1; i < parts; i++ {
		sl := &p.slots[i]
		if sl.state.CompareAndSwap(s<<1, s<<1|1) {
			if tr != nil {
				tr.run(0, sl.fn, sl.lo, sl.hi)
			} else {
				sl.fn(sl.lo, sl.hi)
			}
			done++
		}
	}
	if p.pending.Add(-done) != 0 {
		p.waitParts()
	}
	for i := 1; i < parts; i++ {
		p.slots[i].fn, p.slots[i].tr = nil, nil // drop the reference to the caller's closure
	}
	p.mu.Unlock()
}

// waitParts returns once the job's last part has finished: it polls, then parks until the
// worker finishing the last part wakes it.
func (p *Pool) waitParts() {
	t0 := time.Now()
	for i := 0; p.pending.Load() != 0; i++ {
		if i%pollsPerYield != pollsPerYield-1 {
			continue
		}
		runtime.Gosched()
		if time.Since(t0) > p.spin {
			p.callerSleeping.Store(true)
			if p.pending.Load() == 0 {
				if !p.callerSleeping.CompareAndSwap(true, false) {
					<-p.callerWake // a worker already sent the wake-up: consume it
				}
				return
			}
			<-p.callerWake
			return
		}
	}
}

// worker runs the parts published to slot i, for the life of the process.
func (p *Pool) worker(i int) {
	sl := &p.slots[i]
	var last uint64 // last job seq seen
	for {
		st := p.awaitJob(sl, last)
		last = st >> 1
		if st&1 != 0 || !sl.state.CompareAndSwap(st, st|1) {
			continue // the caller took this part
		}
		if tr := sl.tr; tr != nil {
			tr.run(i, sl.fn, sl.lo, sl.hi)
		} else {
			sl.fn(sl.lo, sl.hi)
		}
		if p.pending.Add(-1) == 0 && p.callerSleeping.CompareAndSwap(true, false) {
			p.callerWake <- struct{}{}
		}
	}
}

// awaitJob returns slot sl's state once it holds a job newer than last: it polls for
// spinDuration, then parks until For wakes it.
func (p *Pool) awaitJob(sl *poolSlot, last uint64) uint64 {
	for {
		t0 := time.Now()
		for i := 0; ; i++ {
			if st := sl.state.Load(); st>>1 != last {
				return st
			}
			if i%pollsPerYield == pollsPerYield-1 {
				runtime.Gosched()
				if time.Since(t0) > p.spin {
					break
				}
			}
		}
		sl.sleeping.Store(true)
		if st := sl.state.Load(); st>>1 != last {
			if !sl.sleeping.CompareAndSwap(true, false) {
				<-sl.wake // For already sent the wake-up: consume it
			}
			return st
		}
		<-sl.wake
	}
}
