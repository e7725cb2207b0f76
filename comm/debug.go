// Timeout and failure reports. Every group keeps the (sequence number, op, shape, start time,
// finished) of its current or last collective; the listener serves it to peers. When a
// collective times out, the rank asks every peer for theirs and the error says, as PyTorch's
// TORCH_DISTRIBUTED_DEBUG=DETAIL does, which ranks never arrived and where each one is.
// Failures are then sent to the peers over the control connections so every rank stops.
package comm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// status is one rank's position in one group.
type status struct {
	seq           uint64
	op, desc      string
	startUnixNano int64
	state         int // stateRunning, stateDone, stateFailed
}

const (
	stateRunning = iota
	stateDone
	stateFailed
)

type statusBox struct {
	mu sync.Mutex
	s  status
}

func (b *statusBox) store(s status) { b.mu.Lock(); b.s = s; b.mu.Unlock() }
func (b *statusBox) load() status   { b.mu.Lock(); defer b.mu.Unlock(); return b.s }

// encode writes "seq\top\tdesc\tstartUnixNano\tstate" (docs/comm.md).
func (s status) encode() []byte {
	return fmt.Appendf(nil, "%d\t%s\t%s\t%d\t%d", s.seq, s.op, s.desc, s.startUnixNano, s.state)
}

func decodeStatus(b []byte) (status, error) {
	f := strings.Split(string(b), "\t")
	if len(f) != 5 {
		return status{}, fmt.Errorf("comm: bad status %q", b)
	}
	seq, err1 := strconv.ParseUint(f[0], 10, 64)
	start, err2 := strconv.ParseInt(f[3], 10, 64)
	state, err3 := strconv.Atoi(f[4])
	if err1 != nil || err2 != nil || err3 != nil || state < stateRunning || state > stateFailed {
		return status{}, fmt.Errorf("comm: bad status %q", b)
	}
	return status{seq: seq, op: f[1], desc: f[2], startUnixNano: start, state: state}, nil
}

func (s status) where() string {
	if s.seq == 0 {
		return "no collective yet"
	}
	return fmt.Sprintf("%s #%d", s.op, s.seq)
}

// queryStatus asks world rank r for its status in group gid.
func (p *proc) queryStatus(r int, gid string) (status, error) {
	c, err := net.DialTimeout("tcp", p.addrs[r], 2*time.Second)
	if err != nil {
		return status{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if err := writeFrame(c, frame{typ: frameStatus, key: gid}); err != nil {
		return status{}, err
	}
	f, err := readFrame(c)
	if err != nil {
		return status{}, err
	}
	if len(f.val) == 0 {
		return status{}, errors.New("group closed there")
	}
	return decodeStatus(f.val)
}

// report describes where every other rank is relative to collective w.
func (g *Group) report(w *Work) string {
	type answer struct {
		s   status
		err error
	}
	answers := make([]answer, len(g.ranks))
	var wg sync.WaitGroup
	for j := range g.ranks {
		if j == g.rank {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := g.p.queryStatus(g.ranks[j], g.id)
			answers[j] = answer{s, err}
		}()
	}
	wg.Wait()
	now := time.Now()
	var behind, with, other []string
	for j, a := range answers {
		if j == g.rank {
			continue
		}
		r := g.ranks[j]
		switch {
		case a.err != nil && g.stopped[j].Load():
			other = append(other, fmt.Sprintf("rank %d already gave up (it aborted the group)", r))
		case a.err != nil:
			other = append(other, fmt.Sprintf("rank %d is unreachable (%v)", r, a.err))
		case a.s.seq < w.seq:
			state := []string{"still running", "finished", "failed"}[a.s.state]
			behind = append(behind, fmt.Sprintf("rank %d never arrived (last seen in %s, %s, started %s ago)",
				r, a.s.where(), state, now.Sub(time.Unix(0, a.s.startUnixNano)).Round(time.Millisecond)))
		case a.s.seq == w.seq && a.s.state == stateRunning:
			with = append(with, fmt.Sprintf("rank %d is in %s", r, a.s.where()))
		case a.s.seq == w.seq && a.s.state == stateFailed:
			with = append(with, fmt.Sprintf("rank %d is in %s (and failed there too)", r, a.s.where()))
		case a.s.seq == w.seq:
			with = append(with, fmt.Sprintf("rank %d finished %s", r, a.s.where()))
		default:
			other = append(other, fmt.Sprintf("rank %d is ahead, in %s (%s)", r, a.s.where(), a.s.desc))
		}
	}
	return strings.Join(append(append(behind, with...), other...), "; ")
}

// explain turns a failed collective into its error, and makes sure every peer stops too.
func (g *Group) explain(w *Work, start time.Time, err error) error {
	head := fmt.Sprintf("%s #%d (%s)", w.name, w.seq, w.desc)
	if ab := g.abortError(); ab != nil {
		return fmt.Errorf("%s failed: %w", head, ab)
	}
	var pe *peerError
	isTimeout := errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errShmTimeout) ||
		(errors.As(err, &pe) && pe.timeout)
	if !isTimeout {
		// A peer that failed first may have closed its data connection before its abort
		// frame (on the control connection) was read: give the watchers a moment, so the
		// error names the rank where the failure started.
		select {
		case <-g.abortCh:
			return fmt.Errorf("%s failed: %w", head, g.abortError())
		case <-time.After(500 * time.Millisecond):
		}
	}
	var out error
	if isTimeout {
		rep := g.report(w)
		out = fmt.Errorf("%s timed out after %v on rank %d: %s", head, g.opts.Timeout, g.ranks[g.rank], rep)
	} else {
		out = fmt.Errorf("%s failed on rank %d: %w", head, g.ranks[g.rank], err)
	}
	g.tellPeers(out.Error())
	g.abort(out)
	g.p.log.Error("ccl collective failed", "err", out)
	return out
}
