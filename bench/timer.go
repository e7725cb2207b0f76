// The Go-timer arrival sleep: the reference the Linux timerfd is tested against, and its
// fallback.

package bench

import (
	"context"
	"time"
)

// fallbackTimer sleeps on a reused time.Timer (millisecond granularity when the process idles).
type fallbackTimer struct{ t *time.Timer }

func newFallbackTimer(context.Context) *fallbackTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &fallbackTimer{t}
}

// sleep returns after d, or early when ctx is done.
func (f *fallbackTimer) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	f.t.Reset(d)
	select {
	case <-ctx.Done():
		f.t.Stop()
	case <-f.t.C:
	}
}

func (f *fallbackTimer) close() { f.t.Stop() }
