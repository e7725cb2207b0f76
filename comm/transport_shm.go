// The shared-memory transport for ranks on one host: one single-producer single-consumer ring
// per ordered pair of ranks, in a /dev/shm file mmapped by both. A ring is a header (head
// counter written by the sender, tail counter written by the receiver, each on its own cache
// line with the other side's waiter word) and Slots slots of SlotBytes; a message is cut into
// slot-sized pieces. Waiting spins, yields, then sleeps on a futex (shm_wait.go), checking the
// group's abort flag and deadline. The receiver creates its rings; once everyone has mapped them
// they are unlinked, so nothing is left in /dev/shm even if a process is killed later. Besides
// send/recv, the transport hands out slots directly (outSlot/publish, next/release) for the
// pipelined ring allreduce (allreduce_shm.go). Layout: docs/comm.md.
package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const (
	shmMagic          = "LLMCCL02"
	shmHeaderSize     = 256
	shmHeadOff        = 64
	shmHeadWaitersOff = 72
	shmTailOff        = 128
	shmTailWaitersOff = 136
)

var errShmTimeout = errors.New("timed out waiting on shared memory")
var errShmAborted = errors.New("group aborted")

type shmRing struct {
	mem       []byte
	head      counterWord // pieces written; waiters: the receiver sleeping on it
	tail      counterWord // pieces read; waiters: the sender sleeping on it
	slots     uint64
	slotBytes int
}

func (r *shmRing) slot(i uint64) []byte {
	off := shmHeaderSize + int(i%r.slots)*r.slotBytes
	return r.mem[off : off+r.slotBytes]
}

type shmTransport struct {
	in, out    []*shmRing // by group rank; nil at me
	ranks      []int
	deadlineNs atomic.Int64
	aborted    atomic.Bool
}

func shmPath(job, gid string, src, dst int) string {
	return fmt.Sprintf("/dev/shm/llmcloud-ccl-%s-%s-%d-%d", job, gid, src, dst)
}

func mapRing(path string, create bool, slots, slotBytes int) (*shmRing, error) {
	size := shmHeaderSize + slots*slotBytes
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if create {
		if err := f.Truncate(int64(size)); err != nil {
			os.Remove(path)
			return nil, err
		}
	} else if fi, err := f.Stat(); err != nil || fi.Size() != int64(size) {
		return nil, fmt.Errorf("comm: %s has the wrong size", path)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		if create {
			os.Remove(path)
		}
		return nil, err
	}
	r := &shmRing{mem: mem, slots: uint64(slots), slotBytes: slotBytes,
		head: counterWord{(*atomic.Uint64)(unsafe.Pointer(&mem[shmHeadOff])), (*atomic.Uint32)(unsafe.Pointer(&mem[shmHeadWaitersOff]))},
		tail: counterWord{(*atomic.Uint64)(unsafe.Pointer(&mem[shmTailOff])), (*atomic.Uint32)(unsafe.Pointer(&mem[shmTailWaitersOff]))}}
	if create {
		copy(mem, shmMagic)
		binary.LittleEndian.PutUint32(mem[8:], uint32(slots))
		binary.LittleEndian.PutUint32(mem[12:], uint32(slotBytes))
	} else if string(mem[:8]) != shmMagic || binary.LittleEndian.Uint32(mem[8:]) != uint32(slots) ||
		binary.LittleEndian.Uint32(mem[12:]) != uint32(slotBytes) {
		syscall.Munmap(mem)
		return nil, fmt.Errorf("comm: %s: bad header", path)
	}
	return r, nil
}

// newShmTransport creates this rank's incoming rings, maps the peers', and unlinks its own
// files once every peer has mapped them.
func newShmTransport(g *Group, deadline time.Time) (*shmTransport, error) {
	p, n, me := g.p, len(g.ranks), g.rank
	for _, r := range g.ranks {
		if p.hosts[r] != p.hosts[g.ranks[me]] {
			return nil, fmt.Errorf("comm: shm transport needs every rank on one host (rank %d is on %s, rank %d on %s)",
				g.ranks[me], p.hosts[g.ranks[me]], r, p.hosts[r])
		}
	}
	t := &shmTransport{in: make([]*shmRing, n), out: make([]*shmRing, n), ranks: g.ranks}
	slots, sb := p.opts.ShmSlots, p.opts.ShmSlotBytes
	var created []string
	defer func() {
		for _, path := range created {
			os.Remove(path)
		}
	}()
	fail := func(err error) (*shmTransport, error) { t.close(); return nil, err }
	for j := range n {
		if j == me {
			continue
		}
		path := shmPath(p.jobID, g.id, j, me)
		r, err := mapRing(path, true, slots, sb)
		if err != nil {
			return fail(fmt.Errorf("comm: shm ring: %w", err))
		}
		created = append(created, path)
		t.in[j] = r
	}
	st := time.Until(deadline)
	key := func(what string, j int) string { return g.id + "/" + what + "/" + strconv.Itoa(g.ranks[j]) }
	if err := p.store.set(key("shm", me), nil, st); err != nil {
		return fail(err)
	}
	for j := range n {
		if j == me {
			continue
		}
		if _, err := p.store.get(key("shm", j), time.Until(deadline)); err != nil {
			return fail(err)
		}
		r, err := mapRing(shmPath(p.jobID, g.id, me, j), false, slots, sb)
		if err != nil {
			return fail(fmt.Errorf("comm: shm ring: %w", err))
		}
		t.out[j] = r
	}
	if err := p.store.set(key("shmopen", me), nil, st); err != nil {
		return fail(err)
	}
	for j := range n {
		if j != me {
			if _, err := p.store.get(key("shmopen", j), time.Until(deadline)); err != nil {
				return fail(err)
			}
		}
	}
	return t, nil
}

// check fails on abort or after the deadline.
func (t *shmTransport) check(peer int, dir string) error {
	if t.aborted.Load() {
		return &peerError{rank: t.ranks[peer], dir: dir, err: errShmAborted}
	}
	if d := t.deadlineNs.Load(); d != 0 && time.Now().UnixNano() > d {
		return &peerError{rank: t.ranks[peer], dir: dir, err: errShmTimeout, timeout: true}
	}
	return nil
}

// outSlot waits for a free slot in the ring to peer; fill it, then publish(r, h).
func (t *shmTransport) outSlot(peer int) (*shmRing, uint64, []byte, error) {
	r := t.out[peer]
	h := r.head.val.Load()
	if tl := r.tail.val.Load(); h-tl >= r.slots {
		if err := r.tail.waitChange(tl, func() error { return t.check(peer, "send to") }); err != nil {
			return nil, 0, nil, err
		}
	}
	return r, h, r.slot(h), nil
}

// publish hands piece h of r to the receiver.
func (r *shmRing) publish(h uint64) { r.head.publish(h + 1) }

// next waits for the next unread piece from peer; read it, then release(r, tl).
func (t *shmTransport) next(peer int) (*shmRing, uint64, []byte, error) {
	r := t.in[peer]
	tl := r.tail.val.Load()
	if r.head.val.Load() == tl {
		if err := r.head.waitChange(tl, func() error { return t.check(peer, "receive from") }); err != nil {
			return nil, 0, nil, err
		}
	}
	return r, tl, r.slot(tl), nil
}

// release frees piece tl of r for the sender.
func (r *shmRing) release(tl uint64) { r.tail.publish(tl + 1) }

func (t *shmTransport) send(peer int, b []byte) error {
	for len(b) > 0 {
		r, h, s, err := t.outSlot(peer)
		if err != nil {
			return err
		}
		n := copy(s, b)
		r.publish(h)
		b = b[n:]
	}
	return nil
}

// sendNow sends b to peer if the ring has free slots for all of it (so it cannot block) and
// says whether it did (and the send's error).
func (t *shmTransport) sendNow(peer int, b []byte) (bool, error) {
	r := t.out[peer]
	pieces := uint64((len(b) + r.slotBytes - 1) / r.slotBytes)
	if r.slots-(r.head.val.Load()-r.tail.val.Load()) < pieces {
		return false, nil
	}
	return true, t.send(peer, b)
}

func (t *shmTransport) recv(peer int, b []byte) error {
	for len(b) > 0 {
		r, tl, s, err := t.next(peer)
		if err != nil {
			return err
		}
		n := copy(b, s)
		r.release(tl)
		b = b[n:]
	}
	return nil
}

func (t *shmTransport) recvReduce(peer int, dst []float32, op Op) error {
	for len(dst) > 0 {
		r, tl, s, err := t.next(peer)
		if err != nil {
			return err
		}
		n := min(len(dst), r.slotBytes/4)
		reduceInto(dst[:n], unsafe.Slice((*float32)(unsafe.Pointer(&s[0])), n), op)
		r.release(tl)
		dst = dst[n:]
	}
	return nil
}

func (t *shmTransport) setDeadline(d time.Time) { t.deadlineNs.Store(d.UnixNano()) }

// abort fails every wait in progress or later, waking sleepers at once.
func (t *shmTransport) abort() {
	t.aborted.Store(true)
	for j := range t.in {
		if t.in[j] != nil {
			t.in[j].head.wakeAll()
		}
		if t.out[j] != nil {
			t.out[j].tail.wakeAll()
		}
	}
}

func (t *shmTransport) close() error {
	for _, rs := range [][]*shmRing{t.in, t.out} {
		for i, r := range rs {
			if r != nil {
				syscall.Munmap(r.mem)
				rs[i] = nil
			}
		}
	}
	return nil
}
