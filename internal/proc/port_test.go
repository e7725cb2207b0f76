package proc

import (
	"net"
	"strconv"
	"testing"
)

// The port FreePort returns can be listened on, and an unknown host is an error naming it.
func TestFreePort(t *testing.T) {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	ln.Close()
	if _, err := FreePort("203.0.113.1"); err == nil {
		t.Error("a port on an address this host does not have")
	}
}
