package kernels

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestForStealing runs forStealing on pools of 1..4 workers over 0..1000 items, with one item
// range made slow so that the other workers must steal from it, and checks that every item
// runs exactly once.
func TestForStealing(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 4} {
		p := NewPool(workers)
		for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
			counts := make([]atomic.Int32, n)
			forStealing(p, n, func(c int) {
				if c < n/workers && c%8 == 0 {
					time.Sleep(50 * time.Microsecond) // the first range is slow
				}
				counts[c].Add(1)
			})
			for c := range counts {
				if got := counts[c].Load(); got != 1 {
					t.Fatalf("workers=%d n=%d: item %d ran %d times", workers, n, c, got)
				}
			}
		}
	}
}
