//go:build unix

package perf

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so far, or 0 if unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
