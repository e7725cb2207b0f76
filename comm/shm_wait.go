// Waiting on a shared-memory ring counter: spin a little (the peer is usually a few hundred
// nanoseconds from publishing), yield a little, then sleep in the kernel on a futex over the
// counter's low 32 bits until the peer wakes us (or 1 ms passes, to re-check the group's abort
// flag and deadline). The peer only issues the wake system call when a waiter announced itself
// in the ring's waiter word; both sides use sequentially consistent atomics (store counter, then
// load waiters; store waiters, then load counter), so a wake is never lost.
package comm

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const (
	futexWait = 0 // FUTEX_WAIT, not FUTEX_PRIVATE: the word is in a MAP_SHARED file mapping
	futexWake = 1

	// shmSpins polls of the counter before yielding (a poll is a load and a compare, about a
	// nanosecond: a few microseconds in all), then shmYields runtime.Gosched calls before the
	// futex sleep.
	shmSpins  = 4000
	shmYields = 20
	// shmSleepMax bounds one futex sleep: abort and deadline are checked at least this often.
	shmSleepMax = time.Millisecond
)

// counterWord is a ring counter (written by one side) and the waiter count the other side
// raises while it sleeps on that counter.
type counterWord struct {
	val     *atomic.Uint64
	waiters *atomic.Uint32
}

// publish stores v and wakes a sleeping waiter, if any.
func (c counterWord) publish(v uint64) {
	c.val.Store(v)
	if c.waiters.Load() != 0 {
		futex(c.val, futexWake, 1<<30, nil)
	}
}

// wakeAll wakes every waiter (abort).
func (c counterWord) wakeAll() { futex(c.val, futexWake, 1<<30, nil) }

// waitChange returns nil once the counter differs from old, or the error check returns.
func (c counterWord) waitChange(old uint64, check func() error) error {
	for range shmSpins {
		if c.val.Load() != old {
			return nil
		}
	}
	for range shmYields {
		if c.val.Load() != old {
			return nil
		}
		runtime.Gosched()
	}
	ts := syscall.NsecToTimespec(int64(shmSleepMax))
	for {
		if err := check(); err != nil {
			return err
		}
		c.waiters.Add(1)
		if c.val.Load() != old {
			c.waiters.Add(^uint32(0))
			return nil
		}
		futex(c.val, futexWait, uint32(old), &ts)
		c.waiters.Add(^uint32(0))
		if c.val.Load() != old {
			return nil
		}
	}
}

// futex calls futex(2) on the low 32 bits of *addr (little-endian: the word's first 4 bytes).
// Errors (EAGAIN: the value already changed; ETIMEDOUT; EINTR) all mean "look again".
func futex(addr *atomic.Uint64, op int, val uint32, ts *syscall.Timespec) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op), uintptr(val),
		uintptr(unsafe.Pointer(ts)), 0, 0)
}
