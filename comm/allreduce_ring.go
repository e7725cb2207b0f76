// Ring allreduce: a reduce-scatter around the ring (n-1 steps, each rank sends one segment to
// its right neighbour while it receives and reduces another from its left, chunk by chunk as
// the bytes arrive) then an all-gather around the same ring (n-1 steps). Each rank sends and
// receives 2(n-1)/n of the buffer: bandwidth-optimal.
package comm

// ringReduceScatter reduces x ([count] float32) in place so that group rank r ends with the
// full reduction of segment mod(r+shift+1, n) of segments off (n+1 offsets).
func (g *Group) ringReduceScatter(x []float32, off []int, shift int, op Op) error {
	n, r := len(g.ranks), g.rank
	right, left := mod(r+1, n), mod(r-1, n)
	for s := 0; s < n-1; s++ {
		si, ri := mod(r-s+shift, n), mod(r-s-1+shift, n)
		send := x[off[si]:off[si+1]]
		recv := x[off[ri]:off[ri+1]]
		err := g.sendRecv(right, f32bytes(send), func() error {
			if len(recv) == 0 {
				return nil
			}
			return g.tr.recvReduce(left, recv, op)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ringAllGather: group rank r holds block own(r) = mod(r+shift, n) of buf (n blocks at byte
// offsets off) and ends with all of them.
func (g *Group) ringAllGather(buf []byte, off []int, shift int) error {
	n, r := len(g.ranks), g.rank
	right, left := mod(r+1, n), mod(r-1, n)
	for s := 0; s < n-1; s++ {
		si, ri := mod(r-s+shift, n), mod(r-s-1+shift, n)
		send := buf[off[si]:off[si+1]]
		recv := buf[off[ri]:off[ri+1]]
		err := g.sendRecv(right, send, func() error {
			if len(recv) == 0 {
				return nil
			}
			return g.tr.recv(left, recv)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (g *Group) ringAllReduce(x []float32, op Op) error {
	if t, ok := g.tr.(*shmTransport); ok {
		return g.shmRingAllReduce(t, x, op)
	}
	n := len(g.ranks)
	off := segments(len(x), n)
	if err := g.ringReduceScatter(x, off, 0, op); err != nil {
		return err
	}
	boff := make([]int, len(off))
	for i, o := range off {
		boff[i] = 4 * o
	}
	return g.ringAllGather(f32bytes(x), boff, 1)
}
