// Package netdelay adds a fixed latency to a network link where the kernel has no netem
// qdisc: a Bridge joins two Ethernet interfaces (the ends of two veth pairs in a namespace of
// its own) and forwards every frame, both ways, a fixed Delay after it arrived. The two sides
// are one Ethernet segment, as if joined by a cable with that latency: TCP, its ACKs, ARP and
// ICMP all take it, so one process in another namespace reaches another with a round trip of
// twice the delay, whatever addresses and ports they pick (scripts/tp-netns.sh runs tensor-
// parallel ranks this way).
//
// Frames are read and written on AF_PACKET sockets with PACKET_VNET_HDR: the virtio-net header
// the kernel puts in front of each frame (checksum to complete, segmentation offload) is
// passed on with it, so the large offloaded TCP segments a veth carries and their partial
// checksums cross the bridge as they are. Linux only.
package netdelay

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Bridge forwards frames between two interfaces after Delay. Open it, Run it, Close it.
type Bridge struct {
	Delay   time.Duration
	a, b    *port
	once    sync.Once
	done    chan struct{}
	running sync.WaitGroup // Run, which closes the sockets when it ends
	// Frames counts the frames forwarded each way (a to b, b to a).
	mu     sync.Mutex
	frames [2]int64
}

// Open opens packet sockets on the interfaces named a and b in the calling thread's network
// namespace (a socket stays in the namespace it was made in: lock the thread, setns, Open,
// and the bridge works from any thread afterwards).
func Open(a, b string, delay time.Duration) (*Bridge, error) {
	if delay < 0 {
		return nil, fmt.Errorf("netdelay: delay %v < 0", delay)
	}
	pa, err := openPort(a)
	if err != nil {
		return nil, err
	}
	pb, err := openPort(b)
	if err != nil {
		pa.close()
		return nil, err
	}
	return &Bridge{Delay: delay, a: pa, b: pb, done: make(chan struct{})}, nil
}

// Run forwards frames both ways until Close (nil) or a socket fails.
func (br *Bridge) Run() error {
	br.running.Add(1)
	defer br.running.Done()
	defer func() { br.a.close(); br.b.close() }()
	errc := make(chan error, 2)
	go func() { errc <- br.forward(br.a, br.b, 0) }()
	go func() { errc <- br.forward(br.b, br.a, 1) }()
	err := <-errc
	br.stop()
	<-errc
	select {
	case <-br.done:
		if errors.Is(err, errClosed) {
			return nil
		}
	default:
	}
	return err
}

// Frames are the frames forwarded from a to b and from b to a so far.
func (br *Bridge) Frames() (ab, ba int64) {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.frames[0], br.frames[1]
}

// Close stops the bridge (Run returns within a tenth of a second) and closes its sockets.
func (br *Bridge) Close() {
	br.stop()
	br.running.Wait()
}

func (br *Bridge) stop() {
	br.once.Do(func() {
		close(br.done)
		br.a.stop()
		br.b.stop()
	})
}

// frame is one frame (with its virtio-net header) and when it arrived.
type frame struct {
	at   time.Time
	data []byte
}

// forward reads frames arriving on from and writes each to to Delay after it arrived, in
// order: a reader queues them, a writer on its own thread sleeps until each one is due.
func (br *Bridge) forward(from, to *port, dir int) error {
	q := make(chan frame, 8192)
	free := make(chan []byte, 8192)
	werr := make(chan error, 1)
	go func() { werr <- br.write(to, q, free, dir) }()
	var err error
	for {
		var buf []byte
		select {
		case buf = <-free:
		default:
			buf = make([]byte, maxFrame)
		}
		var n int
		if n, err = from.read(buf[:maxFrame]); err != nil {
			break
		}
		if n == 0 {
			free <- buf
			continue
		}
		q <- frame{at: time.Now(), data: buf[:n]}
	}
	close(q)
	if werr := <-werr; werr != nil && !errors.Is(werr, errClosed) {
		return werr
	}
	return err
}

func (br *Bridge) write(to *port, q <-chan frame, free chan<- []byte, dir int) error {
	sl := newSleeper()
	defer sl.done()
	for f := range q {
		sl.until(f.at.Add(br.Delay))
		if err := to.write(f.data); err != nil {
			select {
			case <-br.done:
				return errClosed
			default:
			}
			return fmt.Errorf("netdelay: writing %d bytes to %s: %w", len(f.data), to.name, err)
		}
		br.mu.Lock()
		br.frames[dir]++
		br.mu.Unlock()
		select {
		case free <- f.data[:cap(f.data)]:
		default:
		}
	}
	return nil
}

var errClosed = errors.New("netdelay: closed")

// ifIndex is the index of the interface named name.
func ifIndex(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return 0, fmt.Errorf("netdelay: interface %q: %w", name, err)
	}
	return ifi.Index, nil
}
