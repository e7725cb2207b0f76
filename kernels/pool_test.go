// Tests of Pool's hand-off: every item exactly once whether workers spin, park or lose their
// part to the caller; concurrent and nested For calls; and the dispatch-cost benchmark.
package kernels

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkFor runs one For over n items and fails unless every item was visited exactly once and
// every sub-range was the one the split promises.
func checkFor(t *testing.T, p *Pool, n, minChunk int) {
	t.Helper()
	seen := make([]int32, n)
	var calls atomic.Int32
	p.For(n, minChunk, func(lo, hi int) {
		calls.Add(1)
		for i := lo; i < hi; i++ {
			atomic.AddInt32(&seen[i], 1)
		}
	})
	for i, s := range seen {
		if s != 1 {
			t.Fatalf("n=%d item %d visited %d times", n, i, s)
		}
	}
	parts := min(p.Workers(), max(n/max(minChunk, 1), 1))
	if int(calls.Load()) != parts {
		t.Fatalf("n=%d minChunk=%d: %d calls, want %d parts", n, minChunk, calls.Load(), parts)
	}
}

func TestPoolSpinAndPark(t *testing.T) {
	for _, spin := range []time.Duration{0, 50 * time.Microsecond, time.Millisecond} {
		p := newPool(3, spin)
		for it := 0; it < 200; it++ {
			checkFor(t, p, 1+it%37, 1+it%3)
			if it%50 == 0 {
				time.Sleep(2 * time.Millisecond) // let the workers park
			}
		}
	}
}

// TestPoolSlowWorker makes parts uneven so the caller finishes first and must wait (or parks),
// and so the caller takes parts of workers that have not started yet.
func TestPoolSlowWorker(t *testing.T) {
	p := NewPool(4)
	for it := 0; it < 50; it++ {
		var sum atomic.Int64
		p.For(4, 1, func(lo, hi int) {
			if lo == 3 && it%2 == 0 {
				time.Sleep(300 * time.Microsecond)
			}
			sum.Add(int64(lo + 1))
		})
		if sum.Load() != 10 {
			t.Fatalf("iteration %d: parts sum %d, want 10", it, sum.Load())
		}
	}
}

func TestPoolConcurrentAndNested(t *testing.T) {
	p := NewPool(3)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := 0; it < 100; it++ {
				var total, outer, calls atomic.Int64
				p.For(6, 1, func(lo, hi int) {
					calls.Add(1)
					outer.Add(int64(hi - lo))
					// A For inside a job runs inline on this goroutine.
					p.For(10, 1, func(a, b int) { total.Add(int64(b - a)) })
				})
				if outer.Load() != 6 || total.Load() != 10*calls.Load() {
					t.Errorf("outer For covered %d items (want 6), its %d parts' nested Fors %d (want 10 each)",
						outer.Load(), calls.Load(), total.Load())
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkPoolFor measures one fan-out of an empty job over the pool (the fixed cost every
// matmul, norm and attention call pays), with idle gaps of 0 and 20 µs between calls (20 µs is
// about what a decode step spends outside matmuls between two of them).
func BenchmarkPoolFor(b *testing.B) {
	for _, gap := range []time.Duration{0, 20 * time.Microsecond} {
		b.Run("gap="+gap.String(), func(b *testing.B) {
			p := NewPool(2)
			var sink atomic.Int64
			fn := func(lo, hi int) { sink.Add(int64(hi - lo)) }
			var idle time.Duration
			for b.Loop() {
				p.For(2, 1, fn)
				if gap > 0 {
					t0 := time.Now()
					for time.Since(t0) < gap {
					}
					idle += time.Since(t0)
				}
			}
			b.ReportMetric(float64(b.Elapsed()-idle)/float64(b.N)/1e3, "µs/dispatch")
		})
	}
}

// partLog is a PoolTracer that keeps every part per worker.
type partLog struct {
	mu    sync.Mutex
	parts map[int]int
	bad   bool
}

func (l *partLog) PoolPart(w int, start, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.parts[w]++
	l.bad = l.bad || end.Before(start)
}

func TestPoolTracer(t *testing.T) {
	p := NewPool(3)
	l := &partLog{parts: map[int]int{}}
	p.SetTracer(l)
	var sum atomic.Int64
	for range 50 {
		p.For(300, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	}
	p.SetTracer(nil)
	p.For(300, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
	if sum.Load() != 51*300 {
		t.Fatalf("covered %d items, want %d", sum.Load(), 51*300)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	total := 0
	for w, n := range l.parts {
		if w < 0 || w >= 3 {
			t.Errorf("part reported for worker %d", w)
		}
		total += n
	}
	if total != 150 || l.parts[0] < 50 || l.bad {
		t.Errorf("parts per worker %v (want 150 in all, at least 50 on the caller), bad times %v", l.parts, l.bad)
	}
}
