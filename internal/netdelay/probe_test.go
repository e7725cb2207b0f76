package netdelay

import (
	"net"
	"testing"
	"time"
)

// TestPacedRoundTrip: paced round trips against a real Echo server on loopback take about
// d/gap samples, each spaced by gap, and report a positive median below the pacing gap; a
// server that is not there is an error.
func TestPacedRoundTrip(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go Echo(ln)
	t0 := time.Now()
	med, n, err := PacedRoundTrip(ln.Addr().String(), 2048, 2*time.Millisecond, 40*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n != 20 {
		t.Fatalf("%d samples, want 20 (40 ms / 2 ms)", n)
	}
	if el := time.Since(t0); el < 25*2*time.Millisecond {
		t.Fatalf("25 paced round trips took %v: the gap was not kept", el)
	}
	if med <= 0 || med > time.Second {
		t.Fatalf("median %v", med)
	}
	if _, n, err := PacedRoundTrip(ln.Addr().String(), 1, time.Millisecond, 0); err != nil || n != 5 {
		t.Fatalf("d = 0: %d samples, %v; want the minimum of 5", n, err)
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln2.Addr().String()
	ln2.Close()
	if _, _, err := PacedRoundTrip(addr, 2048, time.Millisecond, 10*time.Millisecond); err == nil {
		t.Fatal("no server: no error")
	}
}
