package netdelay

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// vnetHdr is the size of struct virtio_net_hdr, which PACKET_VNET_HDR puts before a frame.
const vnetHdr = 10

// maxFrame holds the largest frame a packet socket hands over: a 64 KiB offloaded TCP segment
// with its Ethernet and virtio-net headers.
const maxFrame = vnetHdr + 14 + 65536 + 256

// port is a packet socket bound to one interface.
type port struct {
	name   string
	fd     int
	closed atomic.Bool // reads end within readTimeout once set
}

// readTimeout bounds a blocked read, so that a closed port's reader notices: closing a packet
// socket does not wake a thread blocked reading it.
const readTimeout = 100 * time.Millisecond

func openPort(name string) (*port, error) {
	idx, err := ifIndex(name)
	if err != nil {
		return nil, err
	}
	proto := int(htons(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("netdelay: packet socket on %s (needs CAP_NET_RAW): %w", name, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netdelay: PACKET_VNET_HDR on %s: %w", name, err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<20)
	tv := unix.NsecToTimeval(int64(readTimeout))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netdelay: SO_RCVTIMEO on %s: %w", name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: idx}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netdelay: binding to %s: %w", name, err)
	}
	return &port{name: name, fd: fd}, nil
}

// read returns the next frame arriving on the interface (0: one this host sent, skipped).
func (p *port) read(buf []byte) (int, error) {
	for {
		if p.closed.Load() {
			return 0, errClosed
		}
		n, from, err := unix.Recvfrom(p.fd, buf, 0)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("netdelay: reading from %s: %w", p.name, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			return 0, nil
		}
		return n, nil
	}
}

func (p *port) write(b []byte) error {
	for {
		_, err := unix.Write(p.fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err
	}
}

// stop makes the port's reader return errClosed within readTimeout.
func (p *port) stop() { p.closed.Store(true) }

// close closes the socket; no read or write may be in progress.
func (p *port) close() { _ = unix.Close(p.fd) }

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// sleeper waits for deadlines on a thread of its own with a 1 µs timer slack: Go's timers
// round waits below a millisecond up to one on some paths, nanosleep on a locked thread is
// within tens of microseconds.
type sleeper struct{}

func newSleeper() *sleeper {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	return &sleeper{}
}

func (s *sleeper) until(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := unix.NsecToTimespec(int64(d))
		_ = unix.Nanosleep(&ts, nil)
	}
}

func (s *sleeper) done() { runtime.UnlockOSThread() }
