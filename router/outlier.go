// Outlier detection beyond failed probes: every backend records when it last sent any byte
// (response headers and bodies, probe answers) and keeps the requests in flight to it with
// their cancel functions. A checker in Run (every 100 ms) ejects a backend that has had a
// request in flight for StallTimeout while sending nothing at all (a frozen process whose
// kernel still accepts connections), and a backend whose probe round trips (EWMA) exceed
// OutlierFactor × the median of its healthy peers and OutlierFloor, for EjectionPeriod, never
// more than half of the backends at once. Any ejection cancels the requests in flight to the
// backend (setHealth): those that sent no byte to the client yet are retried elsewhere.

package router

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ejectedError is the cause a request's context is cancelled with when its backend is ejected.
type ejectedError struct{ backend, reason string }

func (e *ejectedError) Error() string {
	return "backend " + e.backend + " ejected (" + e.reason + ")"
}

// call is one request in flight to a backend.
type call struct {
	cancel  context.CancelCauseFunc
	start   int64       // Router.now() when it was sent
	started atomic.Bool // the response body has begun: the timer now means the stream went idle
}

// callSet holds the requests in flight to one backend.
type callSet struct {
	mu sync.Mutex
	m  map[*call]struct{}
}

func (s *callSet) add(c *call) {
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[*call]struct{})
	}
	s.m[c] = struct{}{}
	s.mu.Unlock()
}

func (s *callSet) remove(c *call) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

// cancelAll cancels every request in flight with cause.
func (s *callSet) cancelAll(cause error) {
	s.mu.Lock()
	for c := range s.m {
		c.cancel(cause)
	}
	s.mu.Unlock()
}

// oldest is the send time of the oldest request in flight (ok false when there is none).
func (s *callSet) oldest() (start int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.m {
		if !ok || c.start < start {
			start, ok = c.start, true
		}
	}
	return start, ok
}

// now is the router's monotonic clock in nanoseconds.
func (r *Router) now() int64 { return int64(time.Since(r.epoch)) }

// watch runs the stall and latency checks every 100 ms until ctx is done.
func (r *Router) watch(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.checkStalls()
		r.checkLatency()
	}
}

// checkStalls ejects the backends that sent nothing for StallTimeout while a request waited on
// them all that time.
func (r *Router) checkStalls() {
	r.mu.RLock()
	bs := append([]*backend(nil), r.backends...)
	r.mu.RUnlock()
	now, limit := r.now(), int64(r.opts.StallTimeout)
	for _, b := range bs {
		last := b.lastByte.Load()
		if now-last < limit {
			continue
		}
		oldest, ok := b.calls.oldest()
		if !ok || now-oldest < limit || !r.peerHeard(b, now-limit) {
			continue
		}
		err := &ejectedError{backend: b.url, reason: "stall"}
		if !r.setHealth(b, fmt.Errorf("sent nothing for %v with requests in flight", time.Duration(now-max(last, 0)).Round(time.Millisecond)), "stall") {
			b.calls.cancelAll(err) // already out (a last-resort request went there): free its requests
		}
	}
}

// peerHeard reports whether another healthy backend sent a byte at or after since (or there is
// none): then the router itself was reading, and b's silence is b's. A router that was not
// scheduled for a while (a loaded machine) hears nobody and ejects nobody for it. Every healthy
// backend answers a probe each HealthInterval, so within a StallTimeout one is always heard.
func (r *Router) peerHeard(b *backend, since int64) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	peers := false
	for _, p := range r.backends {
		if p == b || !p.healthy {
			continue
		}
		if p.lastByte.Load() >= since {
			return true
		}
		peers = true
	}
	return !peers
}

// observeRTT adds a probe's round trip to b's EWMA (ok: the probe answered; else it timed out).
// While b is out, only answers count and each replaces the average: a backend back from a freeze
// starts afresh, not with its timeouts.
func (r *Router) observeRTT(b *backend, d time.Duration, ok bool) {
	const alpha = 0.3
	r.mu.Lock()
	if !b.healthy && b.probed && !ok {
		r.mu.Unlock()
		return
	}
	if b.rtt == 0 || !b.healthy {
		b.rtt = d.Seconds()
	} else {
		b.rtt += alpha * (d.Seconds() - b.rtt)
	}
	r.mu.Unlock()
}

// checkLatency ejects latency outliers: a healthy backend whose probe RTT EWMA is above
// OutlierFactor × the median of its healthy peers' (the lower middle one for an even count) and
// above OutlierFloor, while at most half of the backends are out for latency.
func (r *Router) checkLatency() {
	if r.opts.OutlierFactor < 0 {
		return
	}
	now := time.Now()
	floor := r.opts.OutlierFloor.Seconds()
	var out []*backend
	r.mu.Lock()
	n := len(r.backends)
	ejected := 0
	for _, b := range r.backends {
		if now.Before(b.outUntil) {
			ejected++
		}
	}
	peers := make([]float64, 0, n)
	for _, b := range r.backends {
		if !b.healthy || b.rtt <= floor || (ejected+1)*2 > n {
			continue
		}
		peers = peers[:0]
		for _, p := range r.backends {
			if p != b && p.healthy && p.rtt > 0 && !containsBackend(out, p) {
				peers = append(peers, p.rtt)
			}
		}
		if len(peers) == 0 {
			continue
		}
		slices.Sort(peers)
		med := peers[(len(peers)-1)/2]
		if b.rtt > r.opts.OutlierFactor*med {
			b.outUntil = now.Add(r.opts.EjectionPeriod)
			ejected++
			out = append(out, b)
		}
	}
	r.mu.Unlock()
	for _, b := range out {
		r.mu.RLock()
		rtt := b.rtt
		r.mu.RUnlock()
		r.setHealth(b, fmt.Errorf("probe RTT %v is a latency outlier", time.Duration(rtt*float64(time.Second)).Round(time.Millisecond)), "latency")
	}
}
