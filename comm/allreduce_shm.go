// The pipelined ring allreduce over shared-memory rings, run by one goroutine per rank. The
// buffer is cut into n segments and each segment into slot-sized chunks; round k moves chunk k
// of every segment through all 2(n-1) steps of the ring (reduce-scatter then all-gather) before
// round k+1 starts, so every rank copies, reduces and forwards in one pass with no goroutine
// hand-offs, and the ring's slots let a rank run a few pieces ahead of its neighbours. At rank
// r, one round is:
//
//	step 0:        copy chunk of segment r into a slot for the right neighbour
//	steps 1..n-1:  x[seg r-s] += left's piece; copy the sum into a slot for the right
//	               (at s = n-1 the sum is final: segment r+1 is fully reduced)
//	gather 0..n-2: x[seg r-j] = left's piece; forward it to the right unless j = n-2
//
// A reduction reads the peer's piece straight from its slot, so each element is copied into
// shared memory once per hop and never copied out before it is reduced. Chunks past the end of
// a short segment are empty on both sides and skipped.
package comm

import "unsafe"

func (g *Group) shmRingAllReduce(t *shmTransport, x []float32, op Op) error {
	n, r := len(g.ranks), g.rank
	right, left := mod(r+1, n), mod(r-1, n)
	off := segments(len(x), n)
	chunk := t.out[right].slotBytes / 4 // float32 per piece
	rounds := (off[1] - off[0] + chunk - 1) / chunk
	for s := 1; s < n; s++ {
		rounds = max(rounds, (off[s+1]-off[s]+chunk-1)/chunk)
	}
	piece := func(seg, k int) []float32 {
		lo := off[seg] + k*chunk
		return x[min(lo, off[seg+1]):min(lo+chunk, off[seg+1])]
	}
	// send copies c into the next slot to the right.
	send := func(c []float32) error {
		ring, h, slot, err := t.outSlot(right)
		if err != nil {
			return err
		}
		copy(slot, f32bytes(c))
		ring.publish(h)
		return nil
	}
	// take waits for left's next piece (len(c) elements), applies f to it, and frees the slot.
	take := func(c []float32, f func(c, in []float32)) error {
		ring, tl, slot, err := t.next(left)
		if err != nil {
			return err
		}
		f(c, unsafe.Slice((*float32)(unsafe.Pointer(&slot[0])), len(c)))
		ring.release(tl)
		return nil
	}
	reduce := func(c, in []float32) { reduceInto(c, in, op) }
	store := func(c, in []float32) { copy(c, in) }
	for k := range rounds {
		if c := piece(r, k); len(c) > 0 {
			if err := send(c); err != nil {
				return err
			}
		}
		for s := 1; s < n; s++ {
			c := piece(mod(r-s, n), k)
			if len(c) == 0 {
				continue
			}
			if err := take(c, reduce); err != nil {
				return err
			}
			if err := send(c); err != nil {
				return err
			}
		}
		for j := 0; j < n-1; j++ {
			c := piece(mod(r-j, n), k)
			if len(c) == 0 {
				continue
			}
			if err := take(c, store); err != nil {
				return err
			}
			if j < n-2 {
				if err := send(c); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
