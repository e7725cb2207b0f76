package comm

import (
	"net"
	"testing"
)

// Rank 0 advertises MASTER_ADDR when it is one of this host's own (non-loopback) addresses,
// so that ranks on other hosts can connect to it; loopback otherwise.
func TestSelfHost(t *testing.T) {
	for _, h := range []string{"127.0.0.1", "localhost", "192.0.2.77", "no-such-host.invalid"} {
		if got := selfHost(h); got != "127.0.0.1" {
			t.Errorf("selfHost(%q) = %q, want 127.0.0.1", h, got)
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.To4() == nil {
			continue
		}
		found = true
		if got := selfHost(n.IP.String()); got != n.IP.String() {
			t.Errorf("selfHost(%s), an address of this host: %q", n.IP, got)
		}
	}
	if !found {
		t.Log("no non-loopback IPv4 address on this host: only the loopback cases ran")
	}
}
