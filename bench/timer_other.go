// Arrival timer elsewhere than Linux: a Go timer (see timer_linux.go for why Linux uses a
// timerfd instead).

//go:build !linux

package bench

import "context"

type arrivalTimer = fallbackTimer

func newArrivalTimer(ctx context.Context) *arrivalTimer { return newFallbackTimer(ctx) }
