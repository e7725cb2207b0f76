// Arrival timer on Linux: a timerfd in the runtime's network poller.
//
// Go's own timers sleep in epoll_wait, whose timeout is in whole milliseconds, so when the client
// is idle a 300 µs gap between two arrivals becomes a 1 ms one: at 1,000 req/s half the sends
// left about 0.5 ms late and the Poisson schedule came out in bunches. A timerfd is armed with
// nanoseconds and becomes readable when it expires, which wakes the same epoll_wait at once, so
// sends follow the schedule to within the wakeup latency (tens of µs) without spinning.

//go:build linux

package bench

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// arrivalTimer sleeps the send loop until each arrival.
type arrivalTimer struct {
	fd   int
	f    *os.File // the same descriptor, non-blocking, read through the poller
	stop func() bool
	fall *fallbackTimer // when no timerfd could be made
}

func newArrivalTimer(ctx context.Context) *arrivalTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &arrivalTimer{fall: newFallbackTimer(ctx)}
	}
	t := &arrivalTimer{fd: fd, f: os.NewFile(uintptr(fd), "arrival-timerfd")}
	// Cancellation ends a pending read: a deadline in the past fails it at once.
	t.stop = context.AfterFunc(ctx, func() { t.f.SetReadDeadline(time.Now()) })
	return t
}

// sleep returns after d, or early when ctx is done.
func (t *arrivalTimer) sleep(ctx context.Context, d time.Duration) {
	if t.fall != nil {
		t.fall.sleep(ctx, d)
		return
	}
	if d <= 0 || ctx.Err() != nil {
		return
	}
	// A zero it_value would disarm the timer; d > 0 here.
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(t.fd, 0, &spec, nil); err != nil {
		t.fall = newFallbackTimer(ctx)
		t.fall.sleep(ctx, d)
		return
	}
	var expirations [8]byte
	if _, err := t.f.Read(expirations[:]); err != nil && ctx.Err() == nil {
		// Not a cancellation: the poller failed us, so sleep the rest on a Go timer.
		t.fall = newFallbackTimer(ctx)
		t.fall.sleep(ctx, d)
	}
}

func (t *arrivalTimer) close() {
	if t.f != nil {
		t.stop()
		t.f.Close()
	}
	if t.fall != nil {
		t.fall.close()
	}
}
