// Process groups: a Group is a set of ranks with its own connections (TCP mesh or shared-memory
// rings), a control connection per peer that reports deaths and aborts, and one worker
// goroutine that runs the group's collectives in call order (an async call returns a Work at
// once; a blocking call with nothing queued runs on the caller's goroutine). NewGroup makes a
// sub-group.
package comm

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Group is a communicator over a set of ranks. Its methods are safe to call from one
// goroutine at a time per group (collectives must be issued in the same order on every rank).
type Group struct {
	p        *proc
	id       string
	ranks    []int // world rank of each group rank
	rank     int   // this process's group rank
	opts     Options
	tr       transport
	ctrl     []net.Conn // control connection per group rank (nil at me)
	ctrlMu   []sync.Mutex
	queue    chan *Work
	seq      uint64       // last sequence number handed out (caller goroutine)
	inline   bool         // the caller waits at once (set by wait, caller goroutine)
	pending  atomic.Int64 // queued or running on the worker
	status   statusBox
	ownsProc bool
	scratch  []float32 // worker goroutine's reusable buffer

	abortOnce sync.Once
	abortErr  atomic.Pointer[error]
	abortCh   chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	byes      []atomic.Bool // peers that closed in order
	stopped   []atomic.Bool // peers that sent an abort frame
}

// Work is the handle of an asynchronous collective.
type Work struct {
	name string
	seq  uint64
	desc string
	fn   func() error
	done chan struct{}
	err  error
}

// Wait blocks until the collective finished and returns its error.
func (w *Work) Wait() error {
	<-w.done
	return w.err
}

// Rank is this process's rank in the group; Size the number of ranks.
func (g *Group) Rank() int { return g.rank }
func (g *Group) Size() int { return len(g.ranks) }

// Ranks returns the world ranks of the group's members, by group rank.
func (g *Group) Ranks() []int { return slices.Clone(g.ranks) }

// Transport is the group's transport.
func (g *Group) Transport() Transport { return g.opts.Transport }

func (p *proc) newGroup(gid string, ranks []int, me int) (*Group, error) {
	g := &Group{p: p, id: gid, ranks: ranks, rank: me, opts: p.opts, queue: make(chan *Work, 64),
		abortCh: make(chan struct{}), ctrlMu: make([]sync.Mutex, len(ranks)), byes: make([]atomic.Bool, len(ranks)),
		stopped: make([]atomic.Bool, len(ranks))}
	g.status.store(status{})
	p.mu.Lock()
	p.groups[gid] = g
	p.mu.Unlock()
	deadline := time.Now().Add(p.opts.SetupTimeout)
	ctrl, err := p.connect(gid, "c", ranks, me, deadline)
	if err != nil {
		return nil, err
	}
	g.ctrl = ctrl
	switch p.opts.Transport {
	case TCP:
		data, err := p.connect(gid, "d", ranks, me, deadline)
		if err != nil {
			g.closeCtrl()
			return nil, err
		}
		g.tr = newTCPTransport(data, ranks, p.opts.ChunkBytes)
	case SHM:
		tr, err := newShmTransport(g, deadline)
		if err != nil {
			g.closeCtrl()
			return nil, err
		}
		g.tr = tr
	default:
		g.closeCtrl()
		return nil, fmt.Errorf("comm: unknown transport %q", p.opts.Transport)
	}
	for j, c := range g.ctrl {
		if c != nil {
			g.wg.Add(1)
			go g.watch(j, c)
		}
	}
	g.wg.Add(1)
	go g.worker()
	return g, nil
}

// NewGroup makes a sub-group of the given world ranks. Every rank of g must call it with the
// same list, in the same order relative to g's other NewGroup calls; ranks not in the list get
// (nil, nil).
func (g *Group) NewGroup(ranks []int) (*Group, error) {
	g.p.mu.Lock()
	g.p.nextSub++
	gid := g.id + "." + strconv.Itoa(g.p.nextSub)
	g.p.mu.Unlock()
	seen := map[int]bool{}
	me := -1
	for i, r := range ranks {
		if !slices.Contains(g.ranks, r) || seen[r] {
			return nil, fmt.Errorf("comm: NewGroup(%v): rank %d is not in the parent group or repeated", ranks, r)
		}
		seen[r] = true
		if r == g.ranks[g.rank] {
			me = i
		}
	}
	if len(ranks) == 0 {
		return nil, errors.New("comm: NewGroup of no ranks")
	}
	if me < 0 {
		return nil, nil
	}
	return g.p.newGroup(gid, slices.Clone(ranks), me)
}

// watch reads one peer's control connection: an abort frame or the connection closing without a
// bye aborts the group with an error naming that rank.
func (g *Group) watch(peer int, c net.Conn) {
	defer g.wg.Done()
	for {
		f, err := readFrame(c)
		if err != nil {
			if g.byes[peer].Load() || g.isClosing() {
				return
			}
			g.abort(fmt.Errorf("rank %d died (its connection closed: %v)", g.ranks[peer], err))
			return
		}
		switch f.typ {
		case frameBye:
			g.byes[peer].Store(true)
		case frameAbort:
			g.stopped[peer].Store(true)
			g.abort(fmt.Errorf("rank %d aborted the group: %s", g.ranks[peer], f.val))
		}
	}
}

func (g *Group) isClosing() bool {
	select {
	case <-g.abortCh:
		return true
	default:
		return false
	}
}

// abort fails the group: the collective in progress and every later one return err.
// errGroupClosed is the abort reason of a group closed by its owner (not a failure).
var errGroupClosed = errors.New("group closed")

func (g *Group) abort(err error) {
	g.abortOnce.Do(func() {
		if err != errGroupClosed && g.p != nil {
			g.p.failed.Store(true)
		}
		g.abortErr.Store(&err)
		close(g.abortCh)
		if g.tr != nil {
			g.tr.abort()
		}
	})
}

func (g *Group) abortError() error {
	if e := g.abortErr.Load(); e != nil {
		return *e
	}
	return nil
}

// tellPeers sends an abort frame with reason to every peer (best effort).
func (g *Group) tellPeers(reason string) {
	for j, c := range g.ctrl {
		if c == nil {
			continue
		}
		g.ctrlMu[j].Lock()
		c.SetWriteDeadline(time.Now().Add(time.Second))
		writeFrame(c, frame{typ: frameAbort, val: []byte(reason)})
		g.ctrlMu[j].Unlock()
	}
}

// submit queues a collective; seq numbers follow call order. A blocking call (wait) with
// nothing queued before it runs on the caller's goroutine: no hand-off to the worker and back,
// which on a busy host costs a thread wake-up each way.
func (g *Group) submit(name, desc string, fn func() error) *Work {
	g.seq++
	w := &Work{name: name, seq: g.seq, desc: desc, fn: fn, done: make(chan struct{})}
	if err := g.abortError(); err != nil {
		w.err = fmt.Errorf("%s #%d (%s): group aborted: %w", name, w.seq, desc, err)
		close(w.done)
		return w
	}
	if g.inline && g.pending.Load() == 0 {
		g.wg.Add(1) // Close waits for it before unmapping the transport
		w.err = g.execute(w)
		g.wg.Done()
		close(w.done)
		return w
	}
	g.pending.Add(1)
	g.queue <- w
	return w
}

// wait runs the collective start submits and waits for it (the blocking form of a call).
func (g *Group) wait(start func() *Work) error {
	g.inline = true
	w := start()
	g.inline = false
	return w.Wait()
}

func (g *Group) worker() {
	defer g.wg.Done()
	for w := range g.queue {
		w.err = g.execute(w)
		g.pending.Add(-1) // before done: a Wait that returns sees the worker idle
		close(w.done)
	}
}

// execute runs one collective under the group's timeout and turns failures into reports.
func (g *Group) execute(w *Work) error {
	if err := g.abortError(); err != nil {
		return fmt.Errorf("%s #%d (%s): group aborted: %w", w.name, w.seq, w.desc, err)
	}
	start := time.Now()
	g.status.store(status{seq: w.seq, op: w.name, desc: w.desc, startUnixNano: start.UnixNano()})
	g.tr.setDeadline(start.Add(g.opts.Timeout))
	err := w.fn()
	state := stateDone
	if err != nil {
		state = stateFailed
	}
	g.status.store(status{seq: w.seq, op: w.name, desc: w.desc, startUnixNano: start.UnixNano(), state: state})
	g.p.metrics.observe(w.name, time.Since(start), err)
	if err == nil {
		return nil
	}
	return g.explain(w, start, err)
}

// Close ends the group: peers are told this is an orderly exit, connections and shared memory
// are released. Closing the world group also ends rendezvous (rank 0 waits for every rank to
// close before stopping the store).
func (g *Group) Close() error {
	if g.ownsProc {
		// The groups made from this one end first, each with its goodbye: a peer still
		// finishing a collective with this rank in one of them must see an orderly exit,
		// not a connection closing without a bye (which it reports as this rank's death).
		g.p.mu.Lock()
		var subs []*Group
		for _, sg := range g.p.groups {
			if sg != g {
				subs = append(subs, sg)
			}
		}
		g.p.mu.Unlock()
		for _, sg := range subs {
			sg.Close()
		}
	}
	g.closeOnce.Do(func() {
		close(g.queue)
		for j, c := range g.ctrl {
			if c != nil {
				g.ctrlMu[j].Lock()
				c.SetWriteDeadline(time.Now().Add(time.Second))
				writeFrame(c, frame{typ: frameBye})
				g.ctrlMu[j].Unlock()
			}
		}
		if g.ownsProc {
			g.p.leave(g.abortError() == nil && !g.p.failed.Load())
		}
		g.abort(errGroupClosed)
		g.closeCtrl()
		g.wg.Wait() // the worker and the watchers are done: the transport is unused
		g.tr.close()
		g.p.mu.Lock()
		delete(g.p.groups, g.id)
		g.p.mu.Unlock()
		if g.ownsProc {
			g.p.shutdown()
		}
	})
	return nil
}

func (g *Group) closeCtrl() {
	for _, c := range g.ctrl {
		if c != nil {
			c.Close()
		}
	}
}

// leave registers this rank's exit in the store; rank 0 waits (briefly) for all of them so the
// store outlives every rank's last use of it.
func (p *proc) leave(waitAll bool) {
	t := 10 * time.Second
	if err := p.store.set("bye/"+strconv.Itoa(p.env.Rank), nil, t); err != nil {
		return
	}
	if p.env.Rank == 0 && waitAll {
		for i := 1; i < p.env.WorldSize; i++ {
			if _, err := p.store.get("bye/"+strconv.Itoa(i), t); err != nil {
				return
			}
		}
	}
}
