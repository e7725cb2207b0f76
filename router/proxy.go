// The proxy. A request body is read once (it may be sent again); the policy picks a backend
// among the healthy ones not yet tried; the response is held back until its first body byte, so
// a failure before then (no connection, reset, EOF, a 5xx, a TTFB timeout, an ejection) is
// retried on another backend, up to MaxRetries times (an ejection grants one more). After the
// first byte the body is copied and flushed read by read (SSE passes through unbuffered); a
// failure then cuts the client's connection, so a truncated stream never looks complete, except
// that a stream whose backend stalled ends with an error event (stall.go). 4xx answers pass
// through.

package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/api"
	"github.com/llmcloud/llmcloud/kvtransfer"
	"github.com/prometheus/client_golang/prometheus"
)

// RequestIDHeader is passed to the backend and returned to the client (generated if absent).
const RequestIDHeader = "X-Request-Id"

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// savedResponse is a 5xx answer kept while another backend is tried: the client gets it if none
// does better.
type savedResponse struct {
	status int
	header http.Header
	body   []byte
}

func (r *Router) serveProxy(w http.ResponseWriter, req *http.Request) {
	id := req.Header.Get(RequestIDHeader)
	if id == "" {
		id = r.idPrefix + strconv.FormatUint(r.idSeq.Add(1), 10)
	}
	w.Header().Set(RequestIDHeader, id)
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = readBody(w, req, r.opts.MaxBodyBytes)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				r.fail(w, http.StatusRequestEntityTooLarge, "request_too_large", "request body larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes")
			} else {
				r.fail(w, http.StatusBadRequest, "bad_request", "reading the request body: "+err.Error())
			}
			return
		}
	}
	var in Input
	wantModel := len(body) > 0 && r.listing.Load() > 0
	if r.wantSess || r.wantText || wantModel {
		in = parseInput(body, req.Header.Get(SessionHeader), r.wantSess, r.wantText, wantModel)
	}
	var tried [4]*backend
	excl := tried[:0]
	var saved *savedResponse
	req.Header.Del(kvtransfer.SourceHeader) // only the pd policy names a producer (pd.go)
	req.Header.Del(kvtransfer.HoldHeader)
	req.Header.Del(kvtransfer.PendingHeader)
	if r.pd != nil && pdRequest(req) {
		done, d := r.servePD(w, req, body, id, in, &saved)
		if done {
			return
		}
		if d != nil {
			excl = append(excl, d)
		}
	}
	limit, bonus := r.opts.MaxRetries, false
	for attempt := 0; attempt <= limit; attempt++ {
		b, unknown := r.pick(in, excl)
		if unknown {
			r.modelNotFound(w, in.Model)
			return
		}
		if b == nil {
			break
		}
		if attempt > 0 {
			r.m.retries.Inc()
		}
		excl = append(excl, b)
		res := r.try(w, req, body, id, b, &saved)
		if res == tryDone {
			return
		}
		if res == tryEjected && attempt == limit && !bonus {
			limit, bonus = limit+1, true // an ejection is not the client's fault: one more try
		}
		if req.Context().Err() != nil {
			r.m.clientTotal.WithLabelValues("aborted").Inc()
			return
		}
	}
	if saved != nil {
		copyHeader(w.Header(), saved.header)
		w.Header().Del("Content-Length")
		w.Header().Set(RequestIDHeader, id)
		w.WriteHeader(saved.status)
		w.Write(saved.body)
		r.m.clientTotal.WithLabelValues(strconv.Itoa(saved.status)).Inc()
		return
	}
	if len(excl) == 0 {
		r.fail(w, http.StatusServiceUnavailable, "no_backend", "no backend available")
		return
	}
	r.fail(w, http.StatusBadGateway, "upstream_unavailable", "no backend answered (tried "+strconv.Itoa(len(excl))+")")
}

// pick asks the policy for a backend not in excl among the healthy ones and those not yet
// probed; when there is none, among all (a last resort that finds recovered backends faster
// than the probes). Only backends that may serve the request's model are considered
// (models.go). It returns nil when excl holds every such backend, and unknown when no backend
// serves the model at all.
func (r *Router) pick(in Input, excl []*backend) (b *backend, unknown bool) {
	r.mu.RLock()
	n := len(r.backends)
	cands := make([]Candidate, 0, n)
	bs := make([]*backend, 0, n)
	match, all := r.eligible(in.Model)
	served := all || n == 0 // a model some backend may serve (no backends: 503, not 404)
	for tier := 0; tier < 2 && len(cands) == 0; tier++ {
		for _, b := range r.backends {
			if !all && !match(b) {
				continue
			}
			served = true
			ok := tier == 1 || b.healthy || !b.probed
			if !ok || containsBackend(excl, b) {
				continue
			}
			cands = append(cands, Candidate{URL: b.url, Inflight: int(b.inflight.Load()),
				Running: b.load.Running, Waiting: b.load.Waiting, KVUsage: b.load.KVUsage})
			bs = append(bs, b)
		}
	}
	r.mu.RUnlock()
	if len(cands) == 0 {
		return nil, !served
	}
	r.pmu.Lock()
	d := r.policy.Pick(in, cands)
	r.pmu.Unlock()
	r.m.decisions.WithLabelValues(r.opts.Policy, d.Reason).Inc()
	if d.PrefixLookup {
		r.m.lookups.Inc()
		if d.PrefixHit {
			r.m.hits.Inc()
		}
	}
	if d.Index < 0 || d.Index >= len(bs) {
		return bs[0], false
	}
	return bs[d.Index], false
}

func containsBackend(bs []*backend, b *backend) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// tryResult says what serveProxy does after one attempt.
type tryResult int

const (
	tryDone    tryResult = iota // the client has its answer, or is gone
	tryNext                     // try another backend (a failure before any byte reached the client)
	tryEjected                  // the same, because the backend was ejected meanwhile (not the request's fault)
)

// try sends the request to b; a 5xx it does not pass on lands in *saved. The upstream request
// is registered with b (outlier.go), so ejecting b cancels it, and bounded by one timer: until
// the first response byte it is the TTFB timeout, then it is re-armed with the stream idle
// timeout after every read; either is cut short by the request timeout.
func (r *Router) try(w http.ResponseWriter, req *http.Request, body []byte, id string, b *backend, saved **savedResponse) tryResult {
	ctx, cancelCause := context.WithCancelCause(req.Context())
	defer cancelCause(nil)
	c := &call{cancel: cancelCause, start: r.now()}
	deadline := c.start + int64(r.opts.RequestTimeout)
	b.calls.add(c)
	defer b.calls.remove(c)
	timer := time.AfterFunc(min(r.opts.TTFBTimeout, r.opts.RequestTimeout), func() {
		switch {
		case r.now() >= deadline:
			cancelCause(errRequestTimeout)
		case c.started.Load():
			cancelCause(errStreamIdle)
		default:
			cancelCause(errTTFB)
		}
	})
	defer timer.Stop()
	rearm := func() { timer.Reset(min(r.opts.StreamIdle, time.Duration(deadline-r.now()))) }
	b.requests.Add(1)
	b.inflight.Add(1)
	b.inflightG.Inc()
	defer func() {
		b.inflight.Add(-1)
		b.inflightG.Dec()
	}()
	start := time.Now()
	resp, err := r.send(ctx, req, body, id, b)
	if err != nil {
		r.m.requests.WithLabelValues(b.url, "error").Inc()
		return r.failedBeforeBody(w, req, ctx, b, err)
	}
	defer resp.Body.Close()
	b.lastByte.Store(r.now())
	b.latencyObs.Observe(time.Since(start).Seconds())
	r.m.requests.WithLabelValues(b.url, strconv.Itoa(resp.StatusCode)).Inc()
	if resp.StatusCode >= 500 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		*saved = &savedResponse{status: resp.StatusCode, header: resp.Header, body: data}
		b.failures.Add(1)
		r.setHealth(b, errors.New("answered "+resp.Status), "request")
		return tryNext
	}

	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	buf := *bufp
	n, rerr := readSome(resp.Body, buf)
	if n == 0 && rerr != nil && rerr != io.EOF {
		return r.failedBeforeBody(w, req, ctx, b, rerr)
	}
	c.started.Store(true)
	rearm()
	b.lastByte.Store(r.now())
	b.ttfbObs.Observe(time.Since(start).Seconds())
	if !r.isHealthy(b) {
		r.setHealth(b, nil, "request")
	}
	copyHeader(w.Header(), resp.Header)
	w.Header().Set(RequestIDHeader, id)
	w.WriteHeader(resp.StatusCode)
	flusher, _ := w.(http.Flusher)
	code := strconv.Itoa(resp.StatusCode)
	total := int64(0)
	var tail [2]byte // the last two bytes sent (SSE: an event ends with a blank line)
	for {
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				r.m.clientTotal.WithLabelValues("aborted").Inc()
				return tryDone // the client left; cancel() stops the upstream request
			}
			total += int64(n)
			if n >= 2 {
				tail = [2]byte{buf[n-2], buf[n-1]}
			} else {
				tail = [2]byte{tail[1], buf[0]}
			}
			// Flush unless this is the end: the handler's return flushes that, together with
			// the chunked terminator (one write instead of two).
			if flusher != nil && rerr == nil && !lastPiece(buf[:n], total, resp.ContentLength) {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			r.m.clientTotal.WithLabelValues(code).Inc()
			return tryDone
		}
		if rerr != nil {
			r.m.clientTotal.WithLabelValues("aborted").Inc()
			if req.Context().Err() == nil {
				b.failures.Add(1)
				r.log.Warn("router: upstream body cut", "backend", b.url, "request_id", id, "err", rerr, "cause", context.Cause(ctx))
				if isSSE(resp.Header) {
					// An SSE client sees why its stream ended: a final error event, then a
					// clean end (no [DONE]); other bodies are cut below.
					code, msg := "upstream_stalled", stallMessage(ctx, b, r.opts.StreamIdle)
					if msg == "" {
						code, msg = "upstream_error", "router: backend "+b.url+" ended the stream early: "+rerr.Error()
					}
					endStream(w, flusher, tail, code, msg)
					return tryDone
				}
			}
			panic(http.ErrAbortHandler) // cut the client's connection: the body is incomplete
		}
		n, rerr = readSome(resp.Body, buf)
		if n > 0 {
			rearm()
			b.lastByte.Store(r.now())
		}
	}
}

// send sends the request to b: over the router's own connection pool for http:// backends
// (upstream.go), else through net/http's Transport.
func (r *Router) send(ctx context.Context, req *http.Request, body []byte, id string, b *backend) (*http.Response, error) {
	xff := ""
	if ip, _, err := net.SplitHostPort(req.RemoteAddr); err == nil {
		xff = ip
		if prior := req.Header.Get("X-Forwarded-For"); prior != "" {
			xff = prior + ", " + ip
		}
	}
	if r.pool != nil && b.host != "" {
		extra := [4]string{RequestIDHeader, id, "X-Forwarded-For", xff}
		n := 4
		if xff == "" {
			n = 2
		}
		return r.pool.roundTrip(ctx, b.host, req.Method, b.path+req.URL.RequestURI(), req.Header, extra[:n], body)
	}
	out, err := http.NewRequestWithContext(ctx, req.Method, b.url+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	copyHeader(out.Header, req.Header)
	out.Header.Del("Expect")
	out.Header.Set(RequestIDHeader, id)
	if xff != "" {
		out.Header.Set("X-Forwarded-For", xff)
	}
	// The body is buffered, so the transport may resend it on a kept-alive connection the
	// backend had closed (a race, not a failure of the backend).
	out.Header["X-Idempotency-Key"] = nil
	return r.transport.RoundTrip(out)
}

// readBody reads the request body, at most limit bytes, in one allocation when the length is
// known.
func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, req.Body, limit)
	if n := req.ContentLength; n > 0 && n <= limit {
		b := make([]byte, n)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(rd)
}

var sseDone = []byte("data: [DONE]\n\n")

// lastPiece reports whether the piece just read ends the body: all of a known length, or the
// SSE stream's [DONE] event.
func lastPiece(piece []byte, total, contentLength int64) bool {
	return (contentLength >= 0 && total >= contentLength) || bytes.HasSuffix(piece, sseDone)
}

// readSome reads until it gets at least one byte or an error.
func readSome(r io.Reader, buf []byte) (int, error) {
	for {
		n, err := r.Read(buf)
		if n > 0 || err != nil {
			return n, err
		}
	}
}

func (r *Router) isHealthy(b *backend) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return b.healthy
}

// fail answers with an OpenAI-shaped error body.
func (r *Router) fail(w http.ResponseWriter, status int, code, msg string) {
	typ := "server_error"
	if status < 500 {
		typ = "invalid_request_error"
	}
	data, _ := json.Marshal(api.ErrorResponse{Error: api.ErrorBody{Message: "router: " + msg, Type: typ, Code: code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
	r.m.clientTotal.With(prometheus.Labels{"code": strconv.Itoa(status)}).Inc()
}

// hopHeaders are connection-level headers a proxy does not forward (RFC 9110 7.6.1).
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true}

// copyHeader adds src's end-to-end headers to dst.
func copyHeader(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] {
			continue
		}
		dst[k] = append(dst[k], vs...)
	}
}
