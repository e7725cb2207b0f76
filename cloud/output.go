// Child output: every line a replica writes to stdout or stderr goes to one shared writer with
// the replica's name in front, whole lines at a time so replicas never interleave mid-line.
package cloud

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// lineWriter serializes whole lines onto w.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) prefixed(prefix string) *prefixWriter {
	return &prefixWriter{out: l, prefix: []byte(prefix)}
}

// prefixWriter buffers a partial line until its newline (or Flush).
type prefixWriter struct {
	out    *lineWriter
	prefix []byte
	mu     sync.Mutex
	buf    []byte
	last   string // the last non-empty line written
}

// maxLineBytes bounds a line held back waiting for its newline.
const maxLineBytes = 64 << 10

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			if len(p.buf) >= maxLineBytes {
				p.emit(append(p.buf, '\n'))
				p.buf = p.buf[:0]
			}
			return len(b), nil
		}
		p.emit(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
}

// Flush writes a trailing partial line.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.emit(append(p.buf, '\n'))
		p.buf = nil
	}
}

// Last returns the last non-empty line written (without its newline).
func (p *prefixWriter) Last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *prefixWriter) emit(line []byte) {
	if l := strings.TrimSpace(string(line)); l != "" {
		p.last = l
	}
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	_, _ = p.out.w.Write(append(append([]byte{}, p.prefix...), line...))
}
