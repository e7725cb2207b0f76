// This file measures a link the way the collectives use it: Echo serves, Probe times round
// trips of messages of a given size (both sides send, then read, as an all-reduce round does)
// and a one-way bulk transfer (the bandwidth).
package netdelay

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

const (
	modeEcho = 1 // count times: read size bytes, write them back
	modeSink = 2 // read size·count bytes, write one byte
)

// Echo serves probes on ln until it is closed.
func Echo(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			_ = serveProbe(c)
		}()
	}
}

func serveProbe(c net.Conn) error {
	var hdr [12]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return err
	}
	mode, size, count := binary.LittleEndian.Uint32(hdr[:]), int(binary.LittleEndian.Uint32(hdr[4:])), int(binary.LittleEndian.Uint32(hdr[8:]))
	buf := make([]byte, min(size, 1<<20))
	switch mode {
	case modeEcho:
		for range count {
			if _, err := io.ReadFull(c, buf[:size]); err != nil {
				return err
			}
			if _, err := c.Write(buf[:size]); err != nil {
				return err
			}
		}
	case modeSink:
		if _, err := io.CopyN(io.Discard, c, int64(size)*int64(count)); err != nil {
			return err
		}
		_, err := c.Write([]byte{1})
		return err
	}
	return fmt.Errorf("netdelay: probe mode %d", mode)
}

// RoundTrip is the median time of n round trips of size-byte messages to an Echo server at
// addr (after a few unmeasured ones: TCP's window opened).
func RoundTrip(addr string, size, n int) (time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	warm := 20
	if err := probeHeader(c, modeEcho, size, warm+n); err != nil {
		return 0, err
	}
	buf := make([]byte, size)
	ts := make([]time.Duration, 0, n)
	for i := range warm + n {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, err
		}
		if i >= warm {
			ts = append(ts, time.Since(t0))
		}
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}

// PacedRoundTrip is the median time of round trips of size-byte messages to an Echo server at
// addr, one every gap, for about d (at least 5): the link's latency while other work runs, as
// the collectives of a decode meet it (RoundTrip measures it back to back on an idle host).
func PacedRoundTrip(addr string, size int, gap, d time.Duration) (time.Duration, int, error) {
	n := max(5, int(d/max(gap, time.Microsecond)))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	const warm = 5
	if err := probeHeader(c, modeEcho, size, warm+n); err != nil {
		return 0, 0, err
	}
	buf := make([]byte, size)
	ts := make([]time.Duration, 0, n)
	for i := range warm + n {
		t0 := time.Now()
		if _, err := c.Write(buf); err != nil {
			return 0, 0, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, 0, err
		}
		if i >= warm {
			ts = append(ts, time.Since(t0))
		}
		time.Sleep(gap)
	}
	slices.Sort(ts)
	return ts[len(ts)/2], len(ts), nil
}

// Bandwidth is the rate in bytes per second of sending total bytes one way to an Echo server
// at addr, counted from the first byte sent to the server's acknowledgement less rtt (the
// acknowledgement's trip back and the first byte's trip there).
func Bandwidth(addr string, total int, rtt time.Duration) (float64, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	const chunk = 1 << 20
	count := max(1, total/chunk)
	if err := probeHeader(c, modeSink, chunk, count); err != nil {
		return 0, err
	}
	buf := make([]byte, chunk)
	t0 := time.Now()
	for range count {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
	}
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		return 0, err
	}
	d := time.Since(t0) - rtt
	if d <= 0 {
		return 0, fmt.Errorf("netdelay: %d bytes in %v, less than the round trip %v", count*chunk, time.Since(t0), rtt)
	}
	return float64(count*chunk) / d.Seconds(), nil
}

func probeHeader(c net.Conn, mode, size, count int) error {
	var hdr [12]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(mode))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(size))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(count))
	_, err := c.Write(hdr[:])
	return err
}
