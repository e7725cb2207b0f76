// CPU sharing: replicas that run on fewer cores than their threads (`up --replicas 3` with one
// thread each on a 2-vCPU host) slow each other down while they step at the same time. The
// model is processor sharing: while B replicas are mid-step, each progresses through its
// step's work (the profile's predicted time, measured with the replica's threads to itself) at
// rate min(1, cpus / (threads x B)). When B changes, every pending step end moves.
//
// Rather than rewriting every pending event at each change, the heap is keyed in virtual time:
// the work done by any one busy replica since the start. All busy replicas progress at the
// same rate, so a step of work w begun at virtual time v ends at virtual time v+w whatever
// happens meanwhile, and the order of the pending ends never changes; only the conversion to
// real time does, and it is computed for the heap's top when the event loop looks at it.

package sim

import "math"

// cpuShare is the processor-sharing clock of one event loop.
type cpuShare struct {
	cpus    float64 // cores the replicas share
	threads float64 // compute threads of each replica
	busy    int     // replicas mid-step
	now     int64   // real time (ns) of the last update
	v       float64 // virtual time (ns of work of one busy replica) at now
}

// newCPUShare returns the clock for replicas of threads threads each on cpus cores, or nil
// when the replicas (at most n) can never outnumber the cores: then virtual time is real time
// and the event loop needs no conversion.
func newCPUShare(cpus float64, threads, n int) *cpuShare {
	if cpus <= 0 || threads < 1 || float64(threads*n) <= cpus {
		return nil
	}
	return &cpuShare{cpus: cpus, threads: float64(threads)}
}

// rate is how fast each busy replica's step progresses (1: as measured).
func (c *cpuShare) rate() float64 {
	if c.busy == 0 {
		return 1
	}
	return min(1, c.cpus/(c.threads*float64(c.busy)))
}

// advance moves the clock to real time t (>= now) at the current rate.
func (c *cpuShare) advance(t int64) {
	if t > c.now {
		c.v += float64(t-c.now) * c.rate()
		c.now = t
	}
}

// begin starts a step of work ns at real time t and returns its end's virtual-time key.
func (c *cpuShare) begin(t, work int64) int64 {
	c.advance(t)
	c.busy++
	return int64(c.v) + work
}

// end records that a step ended at real time t.
func (c *cpuShare) end(t int64) {
	c.advance(t)
	c.busy--
}

// key is the virtual-time key of an event at real time t that does no work (a wake-up).
func (c *cpuShare) key(t int64) int64 {
	c.advance(t)
	return int64(c.v)
}

// real converts a pending event's virtual-time key to real time, at the current rate (valid
// until the set of busy replicas changes, which only happens at an event).
func (c *cpuShare) real(key int64) int64 {
	d := float64(key) - c.v
	if d <= 0 {
		return c.now
	}
	return c.now + int64(math.Ceil(d/c.rate()))
}
