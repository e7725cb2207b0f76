// This file implements FreePort: a TCP port for a child process to listen on.
package proc

import (
	"fmt"
	"net"
)

// FreePort asks the kernel for a TCP port on host ("127.0.0.1" for a local job) that was free a
// moment ago. Another process could take it before the child binds; callers that start
// servers on it must survive that (restart on another port, or fail naming the port).
func FreePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("no free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
