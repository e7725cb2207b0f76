// The TCP transport: one connection per pair of ranks (full mesh, set up through the
// rendezvous listener), full duplex, with received float32 data reduced chunk by chunk while
// the rest of the message is still arriving.
package comm

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
	"unsafe"
)

type tcpTransport struct {
	conns      []net.Conn // by group rank; nil at me
	ranks      []int      // world rank of each group rank
	scratch    [][]byte   // per peer, ChunkBytes: recvReduce's landing buffer
	chunkBytes int
}

func newTCPTransport(conns []net.Conn, ranks []int, chunkBytes int) *tcpTransport {
	t := &tcpTransport{conns: conns, ranks: ranks, chunkBytes: chunkBytes, scratch: make([][]byte, len(conns))}
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4 << 20)
			tc.SetWriteBuffer(4 << 20)
		}
	}
	return t
}

func (t *tcpTransport) wrap(peer int, dir string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("connection closed (process exited?)")
	}
	return &peerError{rank: t.ranks[peer], dir: dir, err: err, timeout: errors.Is(err, os.ErrDeadlineExceeded)}
}

func (t *tcpTransport) send(peer int, b []byte) error {
	_, err := t.conns[peer].Write(b)
	return t.wrap(peer, "send to", err)
}

func (t *tcpTransport) recv(peer int, b []byte) error {
	_, err := io.ReadFull(t.conns[peer], b)
	return t.wrap(peer, "receive from", err)
}

func (t *tcpTransport) recvReduce(peer int, dst []float32, op Op) error {
	if t.scratch[peer] == nil {
		t.scratch[peer] = make([]byte, t.chunkBytes)
	}
	buf := t.scratch[peer]
	c := t.conns[peer]
	for len(dst) > 0 {
		n := min(len(dst), len(buf)/4)
		b := buf[:4*n]
		if _, err := io.ReadFull(c, b); err != nil {
			return t.wrap(peer, "receive from", err)
		}
		reduceInto(dst[:n], unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), op)
		dst = dst[n:]
	}
	return nil
}

func (t *tcpTransport) setDeadline(d time.Time) {
	for _, c := range t.conns {
		if c != nil {
			c.SetDeadline(d)
		}
	}
}

func (t *tcpTransport) abort() {
	// A deadline in the past wakes every blocked Read and Write.
	t.setDeadline(time.Unix(1, 0))
}

func (t *tcpTransport) close() error {
	for _, c := range t.conns {
		if c != nil {
			c.Close()
		}
	}
	return nil
}
