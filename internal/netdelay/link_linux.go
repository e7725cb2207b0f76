package netdelay

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Link is three network namespaces: A (10.78.0.1/24 on a0) and B (10.78.0.2/24 on b0), each
// joined by a veth pair to M (a1, b1), where a Bridge joins them. Making one needs root and ip
// (iproute2); tests and scripts/tp-netns.sh use it.
type Link struct{ A, M, B string }

// NewLink makes the namespaces prefix+"A", prefix+"M", prefix+"B" and their veth pairs, with
// the addresses up. On error what was made is deleted.
func NewLink(prefix string) (*Link, error) {
	l := &Link{A: prefix + "A", M: prefix + "M", B: prefix + "B"}
	steps := [][]string{{"netns", "add", l.A}, {"netns", "add", l.M}, {"netns", "add", l.B},
		{"link", "add", "a0", "netns", l.A, "type", "veth", "peer", "name", "a1", "netns", l.M},
		{"link", "add", "b0", "netns", l.B, "type", "veth", "peer", "name", "b1", "netns", l.M},
		{"-n", l.A, "addr", "add", "10.78.0.1/24", "dev", "a0"}, {"-n", l.B, "addr", "add", "10.78.0.2/24", "dev", "b0"},
		{"-n", l.A, "link", "set", "lo", "up"}, {"-n", l.B, "link", "set", "lo", "up"},
		{"-n", l.A, "link", "set", "a0", "up"}, {"-n", l.B, "link", "set", "b0", "up"},
		{"-n", l.M, "link", "set", "a1", "up"}, {"-n", l.M, "link", "set", "b1", "up"}}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Close deletes the namespaces (and with them the veth pairs).
func (l *Link) Close() {
	for _, n := range []string{l.A, l.M, l.B} {
		_ = ipCmd("netns", "del", n)
	}
}

// Bridge opens a bridge with delay between the veth pairs, in M (Run it).
func (l *Link) Bridge(delay time.Duration) (*Bridge, error) {
	var br *Bridge
	err := InNetns(l.M, func() (err error) { br, err = Open("a1", "b1", delay); return err })
	return br, err
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// InNetns runs fn on a thread moved into the network namespace name (/run/netns/name); the
// thread is discarded after (its goroutine exits locked to it), so no other goroutine ever
// runs in that namespace. Sockets fn makes stay in it.
func InNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + name)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
