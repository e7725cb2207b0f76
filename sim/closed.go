// Closed-loop clients (Options.MaxConcurrency, bench serve's --max-concurrency): a request that
// arrives while MaxConcurrency requests are in flight waits, in arrival order, until one of
// them ends as the client sees it (the engine's last token plus the request's overhead), and
// is sent then; its TTFT and E2E count from the send, as bench serve measures them.

package sim

import (
	"container/heap"
	"fmt"
	"math"
)

// closedLoop is the client's semaphore in a shard's event loop.
type closedLoop struct {
	max      int
	inflight int
	queue    []int32 // arrived, waiting for a slot, in arrival order
	releases endHeap // client-side ends of the requests in flight (ns)
	// drawn is each request's measured overhead (Options.Overheads), drawn by draw when its
	// engine run ends (its prefix-cache outcome known): a slot frees when the client has the
	// last token, overhead included.
	draw  *drawer
	drawn []Overhead
	// sends counts the requests sent so far, running those whose engine run has not ended;
	// sentAs[i] is request i's place in that count, and shared[i] whether another was running
	// when it was sent: a request the client served alone (not shared, and none sent after it
	// before its engine run ended) gets its drawn TPOT part (jitter.go).
	sends, running int
	sentAs         []int
	shared         []bool
}

// newClosedLoop returns the semaphore of o.MaxConcurrency slots for n requests (nil: no cap).
func newClosedLoop(o *Options, n int) *closedLoop {
	if o.MaxConcurrency <= 0 {
		return nil
	}
	c := &closedLoop{max: o.MaxConcurrency}
	if len(o.Overheads) > 0 {
		c.draw, c.drawn = newDrawer(o.Overheads, o.OverheadSeed), make([]Overhead, n)
		c.sentAs, c.shared = make([]int, n), make([]bool, n)
	}
	return c
}

// clientE2E is request i's E2E as the client sees it: the engine's, plus its overhead (the
// constant, or one drawn now and kept for applyEach to apply).
func (c *closedLoop) clientE2E(out *Outcome, i int, constant int64) int64 {
	if c.drawn == nil {
		return out.E2E[i] + constant
	}
	v := c.draw.draw(i, out.Cached[i])
	c.running--
	if c.shared[i] || c.sends > c.sentAs[i] {
		v.TPOT -= c.draw.lone // another stream shared the client: the server's pace
	}
	c.drawn[i] = v
	e := max(out.TTFT[i]+int64(v.TTFT), 0)
	for _, g := range out.ITLs[i] {
		e += max(g+int64(v.TPOT), 0)
	}
	return e + constant
}

// loopClosed is loop for every request (routed by the policy) through the client's semaphore.
// Events at one instant: a slot's release first (its waiting request is sent), then an
// arrival, then a step end, so that the next Schedule sees the requests sent at that instant.
func (sh *shard) loopClosed() error {
	c := sh.closed
	n := len(sh.reqs)
	next := 0
	for next < n || sh.heap.len() > 0 || c.releases.Len() > 0 {
		tRel, tArr, tStep := int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64)
		if c.releases.Len() > 0 {
			tRel = c.releases[0]
		}
		if next < n {
			tArr = sh.reqs[next].At
		}
		if sh.heap.len() > 0 {
			tStep = sh.topAt()
		}
		switch {
		case tRel <= tArr && tRel <= tStep:
			heap.Pop(&c.releases)
			c.inflight--
			if len(c.queue) > 0 {
				i := int(c.queue[0])
				c.queue = c.queue[1:]
				sh.reqs[i].At = tRel
				if err := sh.send(i); err != nil {
					return err
				}
			}
		case tArr <= tStep:
			i := next
			next++
			if c.inflight < c.max {
				if err := sh.send(i); err != nil {
					return err
				}
			} else {
				c.queue = append(c.queue, int32(i))
			}
		default:
			at := sh.topAt()
			ev := sh.heap.pop()
			if err := sh.finishStep(int(ev.r), at); err != nil {
				return err
			}
		}
	}
	for _, i := range c.queue {
		sh.out.Errors[i] = fmt.Sprintf("sim: request %d was never sent: all %d --max-concurrency slots stayed held by requests that could not finish", i, c.max)
		sh.out.Replica[i] = -1
	}
	return nil
}

// send takes a slot for request i (its At now the send time), routes it and hands it over; a
// request refused at once (no replica, too long) gives its slot back at once.
func (sh *shard) send(i int) error {
	c := sh.closed
	if c.sentAs != nil {
		c.shared[i] = c.running > 0
		c.sends++
		c.running++
		c.sentAs[i] = c.sends
	}
	c.inflight++
	if err := sh.arrive(i, sh.route(i)); err != nil {
		return err
	}
	if sh.out.Errors[i] != "" {
		heap.Push(&c.releases, sh.reqs[i].At)
		if c.sentAs != nil {
			c.running-- // refused: no engine run
		}
	}
	return nil
}

// finished records that request i's engine run ended: its slot frees when the client has its
// last token.
func (c *closedLoop) finished(sh *shard, i int) {
	heap.Push(&c.releases, sh.reqs[i].At+c.clientE2E(sh.out, i, int64(sh.o.RequestOverhead)))
}

// endHeap is a min-heap of times (container/heap).
type endHeap []int64

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
