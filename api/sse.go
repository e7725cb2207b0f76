// Server-Sent Events as the OpenAI API streams them: each event is one "data: <json>" line
// followed by a blank line; the stream ends with "data: [DONE]". The Responses API's events
// also carry a name ("event: response.created") and end without [DONE].
package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Done is the data of the last event of a stream.
const Done = "[DONE]"

// SSEWriter writes events to an HTTP response and flushes each one.
type SSEWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

// NewSSEWriter sets the event-stream headers on w (call before anything is written).
func NewSSEWriter(w http.ResponseWriter) *SSEWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	f, _ := w.(http.Flusher)
	return &SSEWriter{w: w, f: f}
}

// Event writes v as JSON in one event.
func (s *SSEWriter) Event(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(b, true)
}

// NamedEvent writes v as JSON in one event named name ("event: name" before the data), as
// the Responses API streams.
func (s *SSEWriter) NamedEvent(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.raw(append([]byte("event: "+name+"\ndata: "), b...), false)
}

// Done writes the closing "data: [DONE]" event.
func (s *SSEWriter) Done() error { return s.raw([]byte(Done), true) }

// raw writes one event: data (after "data: " when prefix) and a blank line.
func (s *SSEWriter) raw(data []byte, prefix bool) error {
	buf := make([]byte, 0, len(data)+8)
	if prefix {
		buf = append(buf, "data: "...)
	}
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

// SSEReader reads the data of events from a stream.
type SSEReader struct {
	sc *bufio.Scanner
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &SSEReader{sc: sc}
}

// ErrDone is returned by Next after the "[DONE]" event.
var ErrDone = errors.New("sse: [DONE]")

// Next returns the data of the next event (multi-line data joined by "\n"). It returns
// ErrDone after "[DONE]" and io.EOF (or io.ErrUnexpectedEOF mid-event) when the stream ends.
func (r *SSEReader) Next() ([]byte, error) {
	_, data, err := r.NextEvent()
	return data, err
}

// NextEvent is Next that also returns the event's name ("" when it has none).
func (r *SSEReader) NextEvent() (string, []byte, error) {
	var data []byte
	var name string
	have := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if !have {
				name = ""
				continue
			}
			if string(data) == Done {
				return name, nil, ErrDone
			}
			return name, data, nil
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(field) == "event" {
			name = string(value)
			continue
		}
		if string(field) != "data" {
			continue
		}
		if have {
			data = append(data, '\n')
		}
		data = append(data, value...)
		have = true
	}
	if err := r.sc.Err(); err != nil {
		return name, nil, err
	}
	if have {
		if string(data) == Done {
			return name, nil, ErrDone
		}
		return name, data, io.ErrUnexpectedEOF
	}
	return name, nil, io.EOF
}
