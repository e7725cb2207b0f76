package netdelay

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// newLink makes a Link for t, deleted at its end; a namespace that cannot be made skips t
// unless strict.
func newLink(t *testing.T, strict bool) *Link {
	t.Helper()
	l, err := NewLink(fmt.Sprintf("nd%d", os.Getpid()%100000))
	if err != nil {
		if !strict {
			t.Skipf("cannot make network namespaces here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// startBridge runs a bridge with delay on l.
func startBridge(t *testing.T, l *Link, delay time.Duration) *Bridge {
	t.Helper()
	br, err := l.Bridge(delay)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- br.Run() }()
	t.Cleanup(func() {
		br.Close()
		if err := <-done; err != nil {
			t.Errorf("bridge: %v", err)
		}
	})
	return br
}

// A bridge with a delay d adds 2d to a TCP round trip between the two namespaces (and
// without one adds less than d), and carries 8 MiB of random bytes each way intact (large
// offloaded segments, checksums completed by the receiver).
func TestBridgeDelay(t *testing.T) {
	strict := NamespacePolicy(t)
	l := newLink(t, strict)
	var ln net.Listener
	if err := InNetns(l.B, func() (err error) { ln, err = net.Listen("tcp", "10.78.0.2:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Echo(ln)
	addr := ln.Addr().String()

	const d = 2 * time.Millisecond
	for _, delay := range []time.Duration{0, d} {
		br := startBridge(t, l, delay)
		var rtt time.Duration
		if err := InNetns(l.A, func() (err error) { rtt, err = RoundTrip(addr, 2048, 50); return err }); err != nil {
			t.Fatal(err)
		}
		t.Logf("bridge delay %v: round trip of 2 KiB %v", delay, rtt)
		if delay > 0 && (rtt < 2*delay || rtt > 2*delay+50*time.Millisecond) {
			t.Errorf("bridge delay %v: round trip %v, want 2x the delay (+ at most 50 ms)", delay, rtt)
		}
		if delay == 0 && rtt >= d {
			t.Errorf("bridge without delay: round trip %v, want less than %v", rtt, d)
		}
		if delay == 0 {
			if err := InNetns(l.A, func() error { return echoRandom(addr, 1<<20, 8) }); err != nil {
				t.Error(err)
			}
		}
		br.Close()
		if ab, ba := br.Frames(); ab == 0 || ba == 0 {
			t.Errorf("bridge delay %v forwarded %d and %d frames", delay, ab, ba)
		}
	}
}

// echoRandom sends count random blocks of size bytes to an Echo server and checks they come
// back unchanged.
func echoRandom(addr string, size, count int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	var hdr [12]byte
	binary.LittleEndian.PutUint32(hdr[:], modeEcho)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(size))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(count))
	if _, err := c.Write(hdr[:]); err != nil {
		return err
	}
	sent, got := make([]byte, size), make([]byte, size)
	for i := range count {
		rand.Read(sent)
		if _, err := c.Write(sent); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if !bytes.Equal(sent, got) {
			return fmt.Errorf("block %d of %d bytes came back changed", i, size)
		}
	}
	return nil
}
