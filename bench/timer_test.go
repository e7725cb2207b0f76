package bench

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"
)

type sleeper interface {
	sleep(ctx context.Context, d time.Duration)
	close()
}

var timerNames = []string{"arrival", "go-timer"}

func newTimer(ctx context.Context, name string) sleeper {
	if name == "arrival" {
		return newArrivalTimer(ctx)
	}
	return newFallbackTimer(ctx)
}

// Both timers sleep at least what they are asked, including sub-millisecond and zero waits.
func TestArrivalTimerNeverEarly(t *testing.T) {
	for _, name := range timerNames {
		tm := newTimer(context.Background(), name)
		for _, d := range []time.Duration{0, time.Microsecond, 137 * time.Microsecond, 900 * time.Microsecond, 3 * time.Millisecond} {
			for range 5 {
				start := time.Now()
				tm.sleep(context.Background(), d)
				if got := time.Since(start); got < d {
					t.Errorf("%s: sleep(%v) returned after %v", name, d, got)
				}
			}
		}
		tm.close()
	}
}

// A cancelled context ends a long sleep at once, and later sleeps return immediately.
func TestArrivalTimerCancel(t *testing.T) {
	for _, name := range timerNames {
		ctx, cancel := context.WithCancel(context.Background())
		tm := newTimer(ctx, name)
		done := make(chan time.Time)
		go func() {
			tm.sleep(ctx, time.Hour)
			tm.sleep(ctx, time.Hour)
			done <- time.Now()
		}()
		time.Sleep(20 * time.Millisecond)
		cancelled := time.Now()
		cancel()
		select {
		case ret := <-done:
			// (Timed from the cancellation, not from the goroutine's start, which the scheduler
			// may delay: the test failed once when it began 2 ms after the 20 ms sleep.)
			if ret.Before(cancelled) {
				t.Errorf("%s: returned %v before the cancellation", name, cancelled.Sub(ret))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: sleep not ended by cancellation", name)
		}
		tm.close()
	}
}

// TestArrivalTimerPrecision (LLMCLOUD_TIMING_TESTS=1): how late 300 µs sleeps end, timerfd
// against Go's timer; the arrival timer must be the more precise on a quiet machine.
func TestArrivalTimerPrecision(t *testing.T) {
	if os.Getenv("LLMCLOUD_TIMING_TESTS") == "" {
		t.Skip("timing measurement: set LLMCLOUD_TIMING_TESTS=1 on a quiet machine to run it")
	}
	const d, n = 300 * time.Microsecond, 300
	late := map[string][]float64{}
	for _, name := range timerNames {
		tm := newTimer(context.Background(), name)
		for range n {
			start := time.Now()
			tm.sleep(context.Background(), d)
			late[name] = append(late[name], float64(time.Since(start)-d)/1e3)
		}
		slices.Sort(late[name])
		t.Logf("%s: lateness of a %v sleep: p50 %.0f µs p99 %.0f µs", name, d,
			Percentile(late[name], 50), Percentile(late[name], 99))
		tm.close()
	}
	if Percentile(late["arrival"], 50) >= Percentile(late["go-timer"], 50) {
		t.Errorf("the arrival timer is no more precise than Go's timer")
	}
}
