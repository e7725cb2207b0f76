// connlimit.go caps the open connections of `serve` and `router`. At the cap, a new connection
// does not wait behind idle ones: the connection that has waited longest without a request in
// progress (idle keep-alive, or accepted and not a byte sent yet) is closed to make room, so
// thousands of idle or silent clients cannot starve real requests. Only when every connection
// is busy does Accept wait (the kernel's backlog holds the rest). NewHTTPServer's ConnState hook
// tells each connection what state it is in.
package server

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// LimitListener wraps ln so at most o.MaxConnections accepted connections are open at once,
// closing the longest-waiting idle or silent one when a new connection arrives at the cap.
// Serve it with an http.Server from NewHTTPServer (its ConnState hook marks idleness).
func LimitListener(ln net.Listener, o HTTPOptions) net.Listener {
	o = o.withDefaults()
	return &limitListener{Listener: ln, sem: make(chan struct{}, o.MaxConnections), done: make(chan struct{}),
		conns: map[*limitConn]struct{}{}}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	conns   map[*limitConn]struct{}
	evicted atomic.Int64
}

// evictWait is how long Accept, holding a new connection while every slot is busy, waits
// before it looks again for a connection gone idle that it may close.
const evictWait = 50 * time.Millisecond

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	// A connection is here: make room for it at the cap by closing the longest-waiting idle
	// or silent one; when every connection is busy, hold it until one ends.
	for {
		select {
		case l.sem <- struct{}{}:
			return l.track(c), nil
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		default:
		}
		l.evictOne()
		select {
		case l.sem <- struct{}{}:
			return l.track(c), nil
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		case <-time.After(evictWait):
		}
	}
}

func (l *limitListener) track(c net.Conn) net.Conn {
	lc := &limitConn{Conn: c, l: l}
	lc.state.Store(int32(http.StateNew))
	lc.since.Store(time.Now().UnixNano())
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc
}

// evictOne closes the connection that has waited longest in StateNew or StateIdle, if any.
func (l *limitListener) evictOne() {
	l.mu.Lock()
	var victim *limitConn
	oldest := int64(0)
	for c := range l.conns {
		switch http.ConnState(c.state.Load()) {
		case http.StateNew, http.StateIdle:
			if t := c.since.Load(); victim == nil || t < oldest {
				victim, oldest = c, t
			}
		}
	}
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		victim.Close()
	}
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	l     *limitListener
	once  sync.Once
	state atomic.Int32 // http.ConnState
	since atomic.Int64 // when it entered that state (unix ns)
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.sem
	})
	return err
}

// trackConnState is NewHTTPServer's ConnState hook: it records a limited connection's state.
func trackConnState(c net.Conn, s http.ConnState) {
	if lc, ok := c.(*limitConn); ok {
		lc.state.Store(int32(s))
		lc.since.Store(time.Now().UnixNano())
	}
}
