// What happens to a request whose backend stopped answering: before any byte reached the client
// it is retried elsewhere (a TTFB timeout also ejects the backend); mid-stream, an SSE response
// gets a last error event and ends cleanly (no [DONE]), any other body is cut.

package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/api"
)

var (
	errTTFB           = errors.New("no response byte within the TTFB timeout")
	errStreamIdle     = errors.New("the response stream went idle")
	errRequestTimeout = errors.New("request timeout")
)

// failedBeforeBody handles err from b before any byte of the answer reached the client.
func (r *Router) failedBeforeBody(w http.ResponseWriter, req *http.Request, ctx context.Context, b *backend, err error) tryResult {
	if req.Context().Err() != nil { // the client left: not the backend's fault
		return tryDone
	}
	cause := context.Cause(ctx)
	var ee *ejectedError
	switch {
	case errors.As(cause, &ee):
		return tryEjected
	case errors.Is(cause, errTTFB):
		b.failures.Add(1)
		r.setHealth(b, errors.New("no response byte within "+r.opts.TTFBTimeout.String()), "ttfb")
		return tryNext
	case errors.Is(cause, errRequestTimeout):
		r.fail(w, http.StatusGatewayTimeout, "upstream_timeout", "the backend did not answer within "+r.opts.RequestTimeout.String())
		return tryDone
	}
	b.failures.Add(1)
	r.setHealth(b, err, "request")
	return tryNext
}

// stallMessage is the error event's message when ctx ended because b was ejected or its stream
// went idle ("" for any other cause).
func stallMessage(ctx context.Context, b *backend, idle time.Duration) string {
	cause := context.Cause(ctx)
	var ee *ejectedError
	switch {
	case errors.As(cause, &ee):
		return "router: backend " + b.url + " stopped responding (ejected: " + ee.reason + ")"
	case errors.Is(cause, errStreamIdle):
		return "router: backend " + b.url + " stopped responding (nothing for " + idle.String() + ")"
	}
	return ""
}

func isSSE(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(h.Get("Content-Type"))), "text/event-stream")
}

// endStream writes the final error event of a stream its backend abandoned; tail is the last two
// bytes sent, so an event cut in the middle is closed first.
func endStream(w http.ResponseWriter, f http.Flusher, tail [2]byte, code, msg string) {
	data, _ := json.Marshal(api.ErrorResponse{Error: api.ErrorBody{Message: msg, Type: "server_error", Code: code}})
	var out bytes.Buffer
	switch {
	case tail == [2]byte{'\n', '\n'}:
	case tail[1] == '\n':
		out.WriteByte('\n')
	default:
		out.WriteString("\n\n")
	}
	out.WriteString("data: ")
	out.Write(data)
	out.WriteString("\n\n")
	w.Write(out.Bytes())
	if f != nil {
		f.Flush()
	}
}
