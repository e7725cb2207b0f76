// This file is KVStream, one export's KV blocks handed from the step loop, which copies them
// between steps (kvtransfer_stream.go), to the export's HTTP handler, which writes them.

package engine

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// ErrHoldAborted is a stream's error when the prefill it followed was aborted.
var ErrHoldAborted = errors.New("engine: the prefill of the exported prompt was aborted")

// KVStream is one export's blocks, handed out as the producer computes them.
type KVStream struct {
	n        int
	attached chan struct{} // closed when a HoldKV request or its copy is found (StreamKV's wait)

	mu         sync.Mutex
	ready      [][]byte // copied, not yet taken
	taken      int
	copied     int // blocks given to the stream so far (ready + taken)
	early      int // of them, copied while the prefill still had prompt tokens to compute
	held       bool
	prefillEnd time.Time
	err        error
	closed     bool
	wake       chan struct{}
}

func newKVStream(n int) *KVStream {
	return &KVStream{n: n, attached: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// Len is the number of blocks the stream carries.
func (s *KVStream) Len() int { return s.n }

// Buffered is the number of blocks Next returns without waiting.
func (s *KVStream) Buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ready)
}

// Next returns the next block, waiting until the producer has computed it; io.EOF after the
// last. An aborted prefill is ErrHoldAborted.
func (s *KVStream) Next(ctx context.Context) ([]byte, error) {
	for {
		s.mu.Lock()
		switch {
		case len(s.ready) > 0:
			b := s.ready[0]
			s.ready[0] = nil
			s.ready = s.ready[1:]
			s.taken++
			s.mu.Unlock()
			return b, nil
		case s.taken == s.n:
			s.mu.Unlock()
			return nil, io.EOF
		case s.err != nil:
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close ends the stream for its reader: the step loop copies no more into it.
func (s *KVStream) Close() {
	s.mu.Lock()
	s.closed, s.ready = true, nil
	s.mu.Unlock()
}

// Overlap reports how many blocks were copied while the producer's prefill still had prompt
// tokens to compute, and when that prefill finished (ok false when the stream followed no
// HoldKV request, or it has not finished).
func (s *KVStream) Overlap() (early int, prefillEnd time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.early, s.prefillEnd, s.held && !s.prefillEnd.IsZero()
}

// push adds blocks (step loop); early: the prefill is not finished.
func (s *KVStream) push(blocks [][]byte, early bool) {
	s.mu.Lock()
	if !s.closed {
		s.ready = append(s.ready, blocks...)
	}
	s.copied += len(blocks)
	if early {
		s.early += len(blocks)
	}
	s.mu.Unlock()
	s.poke()
}

func (s *KVStream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.poke()
}

func (s *KVStream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *KVStream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// completed returns a stream of blocks that are all known.
func completed(blocks [][]byte) *KVStream {
	s := newKVStream(len(blocks))
	s.push(blocks, false)
	return s
}

func (s *KVStream) copiedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copied
}
