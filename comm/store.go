// The rendezvous store: rank 0 serves a small key-value store over TCP (MASTER_ADDR:MASTER_PORT);
// every rank sets its listener address and host under its rank and waits for the others'.
// Requests and replies are wire.go frames; get blocks until the key is set.
package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// storeServer is the key-value store run by rank 0.
type storeServer struct {
	ln     net.Listener
	log    *slog.Logger
	mu     sync.Mutex
	vals   map[string][]byte
	ready  map[string]chan struct{} // closed when the key is first set
	closed chan struct{}
	wg     sync.WaitGroup
	conns  map[net.Conn]bool
}

func newStoreServer(ln net.Listener, log *slog.Logger) *storeServer {
	s := &storeServer{ln: ln, log: log, vals: map[string][]byte{}, ready: map[string]chan struct{}{},
		closed: make(chan struct{}), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s
}

func (s *storeServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *storeServer) readyChan(key string) chan struct{} {
	ch, ok := s.ready[key]
	if !ok {
		ch = make(chan struct{})
		s.ready[key] = ch
	}
	return ch
}

// put sets key and wakes its waiters; s.mu is held.
func (s *storeServer) put(key string, val []byte) {
	s.vals[key] = val
	ch := s.readyChan(key)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (s *storeServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	for {
		f, err := readFrame(c)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && err.Error() != "EOF" {
				s.log.Debug("ccl store: connection ended", "remote", c.RemoteAddr(), "err", err)
			}
			return
		}
		reply := s.handle(f)
		if err := writeFrame(c, reply); err != nil {
			return
		}
	}
}

func (s *storeServer) handle(f frame) frame {
	switch f.typ {
	case frameSet:
		s.mu.Lock()
		s.put(f.key, f.val)
		s.mu.Unlock()
		return frame{typ: frameValue}
	case frameGet:
		s.mu.Lock()
		ch := s.readyChan(f.key)
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.closed:
			return frame{typ: frameError, val: []byte("store closed")}
		}
		s.mu.Lock()
		v := s.vals[f.key]
		s.mu.Unlock()
		return frame{typ: frameValue, val: v}
	case frameAdd:
		if len(f.val) != 8 {
			return frame{typ: frameError, val: []byte("add wants an 8-byte int64")}
		}
		s.mu.Lock()
		var cur int64
		if v, ok := s.vals[f.key]; ok && len(v) == 8 {
			cur = int64(binary.LittleEndian.Uint64(v))
		}
		cur += int64(binary.LittleEndian.Uint64(f.val))
		nv := binary.LittleEndian.AppendUint64(nil, uint64(cur))
		s.put(f.key, nv)
		s.mu.Unlock()
		return frame{typ: frameValue, val: nv}
	}
	return frame{typ: frameError, val: []byte(fmt.Sprintf("unknown request type %q", f.typ))}
}

func (s *storeServer) close() {
	close(s.closed)
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// storeClient is one rank's connection to the store; calls are serialised.
type storeClient struct {
	mu sync.Mutex
	c  net.Conn
}

// dialStore retries until the store answers or the timeout passes (rank 0 may start late).
func dialStore(addr string, timeout time.Duration) (*storeClient, error) {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err == nil {
			return &storeClient{c: c}, nil
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("comm: store at %s not reachable within %v: %v", addr, timeout, lastErr)
}

func (sc *storeClient) call(f frame, timeout time.Duration) ([]byte, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.c.SetDeadline(time.Now().Add(timeout))
	defer sc.c.SetDeadline(time.Time{})
	if err := writeFrame(sc.c, f); err != nil {
		return nil, fmt.Errorf("comm: store %c %q: %w", f.typ, f.key, err)
	}
	r, err := readFrame(sc.c)
	if err != nil {
		return nil, fmt.Errorf("comm: store %c %q: %w", f.typ, f.key, err)
	}
	if r.typ == frameError {
		return nil, fmt.Errorf("comm: store %c %q: %s", f.typ, f.key, r.val)
	}
	return r.val, nil
}

func (sc *storeClient) set(key string, val []byte, timeout time.Duration) error {
	_, err := sc.call(frame{typ: frameSet, key: key, val: val}, timeout)
	return err
}

// get waits up to timeout for key to be set. A timed-out get leaves the connection unusable.
func (sc *storeClient) get(key string, timeout time.Duration) ([]byte, error) {
	return sc.call(frame{typ: frameGet, key: key}, timeout)
}

func (sc *storeClient) add(key string, delta int64, timeout time.Duration) (int64, error) {
	v, err := sc.call(frame{typ: frameAdd, key: key, val: binary.LittleEndian.AppendUint64(nil, uint64(delta))}, timeout)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("comm: store add %q: reply of %d bytes", key, len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), nil
}

func (sc *storeClient) close() error { return sc.c.Close() }
