// upstream: a minimal HTTP/1.1 client for the proxy's requests to http:// backends. Unlike
// net/http's Transport, which hands each request to a writer and a reader goroutine per
// connection, it writes the request and reads the response in the handler's own goroutine,
// over a pool of kept-alive connections: fewer goroutine switches per request, which is most
// of a proxy's CPU on a small machine. https backends, and Options.Client, use net/http.
//
// A kept-alive connection the backend has closed shows as a write error or an EOF/reset before
// any byte of the response; the request is then sent once more on a new connection (the body is
// buffered), so a race with the backend's idle timeout is not a backend failure.

package router

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// upConn is one kept-alive connection to a backend.
type upConn struct {
	c         net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
}

// connPool keeps idle connections by backend host:port, most recently used last.
type connPool struct {
	dialer      net.Dialer
	maxIdle     int           // per host
	idleTimeout time.Duration // idle connections older than this are closed, not reused

	mu   sync.Mutex
	idle map[string][]*upConn
}

func newConnPool() *connPool {
	return &connPool{dialer: net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle: 1024, idleTimeout: 60 * time.Second, idle: map[string][]*upConn{}}
}

// get returns an idle connection to host (reused = true) or dials a new one.
func (p *connPool) get(ctx context.Context, host string) (c *upConn, reused bool, err error) {
	now := time.Now()
	p.mu.Lock()
	for l := p.idle[host]; len(l) > 0; l = p.idle[host] {
		c = l[len(l)-1]
		p.idle[host] = l[:len(l)-1]
		if now.Sub(c.idleSince) < p.idleTimeout {
			p.mu.Unlock()
			return c, true, nil
		}
		c.c.Close()
	}
	p.mu.Unlock()
	c, err = p.dial(ctx, host)
	return c, false, err
}

func (p *connPool) dial(ctx context.Context, host string) (*upConn, error) {
	nc, err := p.dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	return &upConn{c: nc, br: bufio.NewReaderSize(nc, 16<<10), bw: bufio.NewWriterSize(nc, 16<<10)}, nil
}

// put keeps c for reuse (or closes it when the host has enough idle ones).
func (p *connPool) put(host string, c *upConn) {
	c.idleSince = time.Now()
	p.mu.Lock()
	if len(p.idle[host]) < p.maxIdle {
		p.idle[host] = append(p.idle[host], c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.c.Close()
	}
}

// closeHost closes the idle connections of a backend that left the set.
func (p *connPool) closeHost(host string) {
	p.mu.Lock()
	l := p.idle[host]
	delete(p.idle, host)
	p.mu.Unlock()
	for _, c := range l {
		c.c.Close()
	}
}

// upBody is an upstream response body read from a pooled connection: at its end the
// connection goes back to the pool if it can be reused; Close closes it otherwise.
type upBody struct {
	body   io.ReadCloser // as http.ReadResponse made it
	pool   *connPool
	host   string
	conn   *upConn
	keep   bool        // the response allows reuse
	stop   func() bool // stops the cancellation hook; false if it already fired
	sawEOF bool
}

func (u *upBody) Read(p []byte) (int, error) {
	n, err := u.body.Read(p)
	if err == io.EOF && !u.sawEOF {
		u.sawEOF = true
		if u.stop() && u.keep && u.conn != nil {
			u.pool.put(u.host, u.conn)
			u.conn = nil
		}
	}
	return n, err
}

func (u *upBody) Close() error {
	u.stop()
	if u.conn != nil {
		u.conn.c.Close()
		u.conn = nil
	}
	return nil
}

// methodReqs are the requests http.ReadResponse is told the responses answer (it reads only
// their Method).
var methodReqs = sync.Map{}

func methodReq(m string) *http.Request {
	if r, ok := methodReqs.Load(m); ok {
		return r.(*http.Request)
	}
	r, _ := methodReqs.LoadOrStore(m, &http.Request{Method: m})
	return r.(*http.Request)
}

// roundTrip sends one request to host (host:port) and returns its response with the headers
// read; the caller must close its Body. header is the client's (hop-by-hop fields, Host,
// Content-Length and Expect are left out), extra are fields to add or replace (name, value
// pairs, canonical names). ctx cancels the request at any point.
func (p *connPool) roundTrip(ctx context.Context, host, method, uri string, header http.Header, extra []string, body []byte) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		c, reused, err := p.get(ctx, host)
		if err != nil {
			return nil, err
		}
		stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
		err = writeRequest(c.bw, host, method, uri, header, extra, body)
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(c.br, methodReq(method))
		}
		if err == nil {
			resp.Body = &upBody{body: resp.Body, pool: p, host: host, conn: c, keep: !resp.Close, stop: stop}
			return resp, nil
		}
		stop()
		c.c.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if !reused || attempt > 0 || !staleConnError(err) {
			return nil, err
		}
	}
}

// staleConnError: what a kept-alive connection the peer closed gives before any response.
func staleConnError(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// writeRequest writes an HTTP/1.1 request with a Content-Length body and flushes it.
func writeRequest(w *bufio.Writer, host, method, uri string, header http.Header, extra []string, body []byte) error {
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(uri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	for k, vs := range header {
		if hopHeaders[k] || k == "Host" || k == "Content-Length" || k == "Expect" || replaced(extra, k) {
			continue
		}
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(headerValue(v))
			w.WriteString("\r\n")
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		w.WriteString(extra[i])
		w.WriteString(": ")
		w.WriteString(headerValue(extra[i+1]))
		w.WriteString("\r\n")
	}
	if len(body) > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		w.WriteString("Content-Length: ")
		w.WriteString(strconv.Itoa(len(body)))
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	w.Write(body)
	return w.Flush()
}

// headerValue drops CR and LF, so a header value cannot split the request.
func headerValue(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] == '\r' || v[i] == '\n' {
			b := []byte(v)
			for j := range b {
				if b[j] == '\r' || b[j] == '\n' {
					b[j] = ' '
				}
			}
			return string(b)
		}
	}
	return v
}

func replaced(extra []string, k string) bool {
	for i := 0; i < len(extra); i += 2 {
		if extra[i] == k {
			return true
		}
	}
	return false
}
