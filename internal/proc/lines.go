// Package proc holds what the project's process supervisors share (package cloud's replicas,
// package launch's ranks): children in their own process groups, and their output merged onto
// one writer line by line with a prefix naming the child.
//
// This file implements the line writers: every line a child writes to stdout or stderr goes to
// one shared writer with the child's name in front, whole lines at a time so children never
// interleave mid-line.
package proc

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// Lines serializes whole lines onto one writer.
type Lines struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLines returns a Lines writing to w.
func NewLines(w io.Writer) *Lines { return &Lines{w: w} }

// Prefixed returns a writer for one child stream whose lines go to l with prefix in front.
// Use one per stream: a partial line on one stream is not glued to a line of another.
func (l *Lines) Prefixed(prefix string) *PrefixWriter {
	return &PrefixWriter{out: l, prefix: []byte(prefix)}
}

// PrefixWriter buffers a partial line until its newline (or Flush).
type PrefixWriter struct {
	out    *Lines
	prefix []byte
	mu     sync.Mutex
	buf    []byte
	last   string // the last non-empty line written
}

// MaxLineBytes bounds a line held back waiting for its newline; longer ones are cut.
const MaxLineBytes = 64 << 10

func (p *PrefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			if len(p.buf) >= MaxLineBytes {
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
func (p *PrefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		p.emit(append(p.buf, '\n'))
		p.buf = nil
	}
}

// Last returns the last non-empty line written (without its newline).
func (p *PrefixWriter) Last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *PrefixWriter) emit(line []byte) {
	if l := strings.TrimSpace(string(line)); l != "" {
		p.last = l
	}
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	_, _ = p.out.w.Write(append(append([]byte{}, p.prefix...), line...))
}
