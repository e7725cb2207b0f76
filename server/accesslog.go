// The access log: one slog line per HTTP response (method, path, status, request id, duration,
// and for a status >= 400 the reason, the message of the error body). Failures are logged
// whatever Options.LogRequests says, as vLLM keeps logging errors under --disable-log-requests:
// 4xx, 429 and 503 at warn, other 5xx at error. Successes are logged at info when LogRequests is
// set, except /health and /metrics (probes and scrapes), which log at debug.
//
// The request id is the client's X-Request-Id (the router sends one), else one made here, which
// then also names the completion ("cmpl-<id>"). It is sent back in X-Request-Id and added to
// the engine's per-request line, so the two lines of one request can be matched.

package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// requestIDHeader carries the request id in both directions.
const requestIDHeader = "X-Request-Id"

// maxReasonBytes bounds the reason of a failure that did not come from writeError.
const maxReasonBytes = 300

type ridKey struct{}

// reqID is the request id in a request's context and whether the server made it.
type reqID struct {
	id   string
	made bool
}

// logWriter is the ResponseWriter handlers see: it keeps the status and the failure reason.
type logWriter struct {
	http.ResponseWriter
	status int
	reason string
}

func (w *logWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *logWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 && w.reason == "" { // an error written by net/http itself (405, ...)
		w.reason = strings.TrimSpace(string(b[:min(len(b), maxReasonBytes)]))
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes flushes on (the SSE writer needs them).
func (w *logWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *logWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noteReason records msg as the reason of an error response written to w.
func noteReason(w http.ResponseWriter, msg string) {
	if lw, ok := w.(*logWriter); ok {
		lw.reason = msg
	}
}

// accessLog wraps h with the request id and the access log line.
func (s *Server) accessLog(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := reqID{id: r.Header.Get(requestIDHeader)}
		if rid.id == "" {
			rid = reqID{id: s.newBase(), made: true}
		}
		w.Header().Set(requestIDHeader, rid.id)
		lw := &logWriter{ResponseWriter: w}
		h.ServeHTTP(lw, r.WithContext(context.WithValue(r.Context(), ridKey{}, rid)))
		status := lw.status
		if status == 0 {
			status = http.StatusOK
		}
		level, msg := slog.LevelInfo, "response"
		switch {
		case status >= 500 && status != http.StatusServiceUnavailable:
			level, msg = slog.LevelError, "request failed"
		case status >= 400:
			level, msg = slog.LevelWarn, "request failed"
		case !s.opts.LogRequests:
			return
		}
		if r.URL.Path == "/health" || r.URL.Path == "/metrics" {
			level = slog.LevelDebug
		}
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", status), slog.String("request_id", rid.id)}
		if status >= 400 {
			attrs = append(attrs, slog.String("reason", lw.reason))
		}
		attrs = append(attrs, slog.Duration("duration", time.Since(start)))
		s.log.LogAttrs(r.Context(), level, msg, attrs...)
	})
}

// requestID is r's request id (set by accessLog; "" for a handler called without it).
func requestID(ctx context.Context) string {
	rid, _ := ctx.Value(ridKey{}).(reqID)
	return rid.id
}

// respID is the id of the response to r: prefix-<request id> when the server made the request
// id, else a fresh one (a client's X-Request-Id need not be unique).
func (s *Server) respID(r *http.Request, prefix string) string {
	if rid, _ := r.Context().Value(ridKey{}).(reqID); rid.made {
		return prefix + "-" + rid.id
	}
	return s.newID(prefix)
}
