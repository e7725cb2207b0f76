// The other collectives: broadcast, reduce, reduce-scatter, all-gather, gather, scatter,
// all-to-all, point-to-point send/recv and barrier. Each has an Async form returning a Work;
// the plain form waits. Sizes are checked before anything is sent: a mismatch is an error on
// the calling rank, never a panic.
package comm

import "fmt"

// AsBytes views x ([n] float32) as its 4n bytes (native byte order) for the byte collectives.
func AsBytes(x []float32) []byte { return f32bytes(x) }

func (g *Group) checkRoot(root int) error {
	if root < 0 || root >= len(g.ranks) {
		return fmt.Errorf("root %d out of range for a group of %d", root, len(g.ranks))
	}
	return nil
}

func (g *Group) failed(name, desc string, err error) *Work {
	g.seq++
	w := &Work{name: name, seq: g.seq, desc: desc, done: make(chan struct{})}
	w.err = fmt.Errorf("%s #%d (%s): %w", name, w.seq, desc, err)
	close(w.done)
	return w
}

// Broadcast copies root's buf to every rank's buf (same length everywhere).
func (g *Group) Broadcast(buf []byte, root int) error {
	return g.wait(func() *Work { return g.BroadcastAsync(buf, root) })
}

func (g *Group) BroadcastAsync(buf []byte, root int) *Work {
	desc := fmt.Sprintf("bytes[%d] root %d", len(buf), root)
	if err := g.checkRoot(root); err != nil {
		return g.failed("broadcast", desc, err)
	}
	return g.submit("broadcast", desc, func() error { return g.treeBroadcast(buf, root) })
}

// Reduce folds every rank's x ([n] float32) with op into root's x; other ranks' x is unchanged.
func (g *Group) Reduce(x []float32, root int, op Op) error {
	return g.wait(func() *Work { return g.ReduceAsync(x, root, op) })
}

func (g *Group) ReduceAsync(x []float32, root int, op Op) *Work {
	desc := fmt.Sprintf("float32[%d] %s root %d", len(x), op, root)
	if err := g.checkRoot(root); err != nil {
		return g.failed("reduce", desc, err)
	}
	return g.submit("reduce", desc, func() error { return g.treeReduce(x, root, op) })
}

// ReduceScatter reduces src ([n*count] float32) over all ranks with op; group rank r gets
// block r of the result in dst ([count]).
func (g *Group) ReduceScatter(dst, src []float32, op Op) error {
	return g.wait(func() *Work { return g.ReduceScatterAsync(dst, src, op) })
}

func (g *Group) ReduceScatterAsync(dst, src []float32, op Op) *Work {
	n := len(g.ranks)
	desc := fmt.Sprintf("float32[%d] -> float32[%d] %s", len(src), len(dst), op)
	if len(src) != n*len(dst) {
		return g.failed("reducescatter", desc, fmt.Errorf("src has %d elements, want %d x %d", len(src), n, len(dst)))
	}
	return g.submit("reducescatter", desc, func() error {
		work := g.scratchF32(len(src))
		copy(work, src)
		off := make([]int, n+1)
		for i := range off {
			off[i] = i * len(dst)
		}
		if err := g.ringReduceScatter(work, off, -1, op); err != nil {
			return err
		}
		copy(dst, work[off[g.rank]:off[g.rank+1]])
		return nil
	})
}

// AllGather concatenates every rank's src ([k] bytes) into dst ([n*k] bytes) by group rank.
func (g *Group) AllGather(dst, src []byte) error {
	return g.wait(func() *Work { return g.AllGatherAsync(dst, src) })
}

func (g *Group) AllGatherAsync(dst, src []byte) *Work {
	n := len(g.ranks)
	desc := fmt.Sprintf("bytes[%d] -> bytes[%d]", len(src), len(dst))
	if len(dst) != n*len(src) {
		return g.failed("allgather", desc, fmt.Errorf("dst has %d bytes, want %d x %d", len(dst), n, len(src)))
	}
	return g.submit("allgather", desc, func() error {
		k := len(src)
		copy(dst[g.rank*k:], src)
		off := make([]int, n+1)
		for i := range off {
			off[i] = i * k
		}
		return g.ringAllGather(dst, off, 0)
	})
}

// Gather collects every rank's src ([k] bytes) into root's dst ([n*k] bytes; ignored elsewhere).
func (g *Group) Gather(dst, src []byte, root int) error {
	return g.wait(func() *Work { return g.GatherAsync(dst, src, root) })
}

func (g *Group) GatherAsync(dst, src []byte, root int) *Work {
	n, k := len(g.ranks), len(src)
	desc := fmt.Sprintf("bytes[%d] root %d", k, root)
	if err := g.checkRoot(root); err != nil {
		return g.failed("gather", desc, err)
	}
	if g.rank == root && len(dst) != n*k {
		return g.failed("gather", desc, fmt.Errorf("dst has %d bytes, want %d x %d", len(dst), n, k))
	}
	return g.submit("gather", desc, func() error {
		if g.rank != root {
			return g.tr.send(root, src)
		}
		copy(dst[root*k:], src)
		return g.fanIn(func(j int) error { return g.tr.recv(j, dst[j*k:(j+1)*k]) })
	})
}

// Scatter sends block j of root's src ([n*k] bytes) to group rank j's dst ([k] bytes).
func (g *Group) Scatter(dst, src []byte, root int) error {
	return g.wait(func() *Work { return g.ScatterAsync(dst, src, root) })
}

func (g *Group) ScatterAsync(dst, src []byte, root int) *Work {
	n, k := len(g.ranks), len(dst)
	desc := fmt.Sprintf("bytes[%d] root %d", k, root)
	if err := g.checkRoot(root); err != nil {
		return g.failed("scatter", desc, err)
	}
	if g.rank == root && len(src) != n*k {
		return g.failed("scatter", desc, fmt.Errorf("src has %d bytes, want %d x %d", len(src), n, k))
	}
	return g.submit("scatter", desc, func() error {
		if g.rank != root {
			return g.tr.recv(root, dst)
		}
		copy(dst, src[root*k:(root+1)*k])
		return g.fanIn(func(j int) error { return g.tr.send(j, src[j*k:(j+1)*k]) })
	})
}

// fanIn runs fn for every other group rank concurrently and returns the first error.
func (g *Group) fanIn(fn func(j int) error) error {
	errc := make(chan error, len(g.ranks))
	for j := range g.ranks {
		if j != g.rank {
			go func() { errc <- fn(j) }()
		}
	}
	var first error
	for range len(g.ranks) - 1 {
		if err := <-errc; err != nil && first == nil {
			first = err
			g.tr.abort()
		}
	}
	return first
}

// AllToAll sends block j of src ([n*k] bytes) to group rank j, which stores it as block r
// (this rank) of its dst ([n*k] bytes). Pairwise exchange: step s sends to r+s, receives from r-s.
func (g *Group) AllToAll(dst, src []byte) error {
	return g.wait(func() *Work { return g.AllToAllAsync(dst, src) })
}

func (g *Group) AllToAllAsync(dst, src []byte) *Work {
	n := len(g.ranks)
	desc := fmt.Sprintf("bytes[%d]", len(src))
	if len(src)%n != 0 || len(dst) != len(src) {
		return g.failed("alltoall", desc, fmt.Errorf("src %d and dst %d bytes must be equal multiples of %d", len(src), len(dst), n))
	}
	return g.submit("alltoall", desc, func() error {
		k, r := len(src)/n, g.rank
		copy(dst[r*k:(r+1)*k], src[r*k:(r+1)*k])
		for s := 1; s < n; s++ {
			to, from := mod(r+s, n), mod(r-s, n)
			err := g.sendRecv(to, src[to*k:(to+1)*k], func() error {
				if k == 0 {
					return nil
				}
				return g.tr.recv(from, dst[from*k:(from+1)*k])
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Send sends buf to group rank peer, which must call Recv with a buffer of the same length.
func (g *Group) Send(buf []byte, peer int) error {
	return g.wait(func() *Work { return g.SendAsync(buf, peer) })
}

func (g *Group) SendAsync(buf []byte, peer int) *Work {
	desc := fmt.Sprintf("bytes[%d] to %d", len(buf), peer)
	if err := g.checkRoot(peer); err != nil || peer == g.rank {
		return g.failed("send", desc, fmt.Errorf("bad peer %d", peer))
	}
	return g.submit("send", desc, func() error { return g.tr.send(peer, buf) })
}

// Recv fills buf from group rank peer.
func (g *Group) Recv(buf []byte, peer int) error {
	return g.wait(func() *Work { return g.RecvAsync(buf, peer) })
}

func (g *Group) RecvAsync(buf []byte, peer int) *Work {
	desc := fmt.Sprintf("bytes[%d] from %d", len(buf), peer)
	if err := g.checkRoot(peer); err != nil || peer == g.rank {
		return g.failed("recv", desc, fmt.Errorf("bad peer %d", peer))
	}
	return g.submit("recv", desc, func() error { return g.tr.recv(peer, buf) })
}

// Barrier returns when every rank has entered it.
func (g *Group) Barrier() error { return g.wait(func() *Work { return g.BarrierAsync() }) }

func (g *Group) BarrierAsync() *Work {
	var one [1]float32
	return g.submit("barrier", "", func() error {
		if len(g.ranks) == 1 {
			return nil
		}
		return g.rhdAllReduce(one[:], Sum)
	})
}

// SendRecv sends sendBuf to group rank to while it receives recvBuf from group rank from, both
// at once (a ring shift when every rank sends to r+1 and receives from r-1).
func (g *Group) SendRecv(sendBuf []byte, to int, recvBuf []byte, from int) error {
	return g.wait(func() *Work { return g.SendRecvAsync(sendBuf, to, recvBuf, from) })
}

func (g *Group) SendRecvAsync(sendBuf []byte, to int, recvBuf []byte, from int) *Work {
	desc := fmt.Sprintf("bytes[%d] to %d, bytes[%d] from %d", len(sendBuf), to, len(recvBuf), from)
	if g.checkRoot(to) != nil || g.checkRoot(from) != nil || to == g.rank || from == g.rank {
		return g.failed("sendrecv", desc, fmt.Errorf("bad peers %d, %d", to, from))
	}
	return g.submit("sendrecv", desc, func() error {
		return g.sendRecv(to, sendBuf, func() error {
			if len(recvBuf) == 0 {
				return nil
			}
			return g.tr.recv(from, recvBuf)
		})
	})
}
