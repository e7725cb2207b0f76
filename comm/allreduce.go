// AllReduce and the choice among its three algorithms (ring, tree, recursive halving-doubling)
// by message size and world size, overridable per group (Options.Algo, LLMCLOUD_CCL_ALGO).
package comm

import "fmt"

// rhdMaxBytes: up to this size the latency of log2(n) steps wins (recursive halving-doubling);
// above it the ring's bandwidth-optimal 2(n-1)/n traffic per rank does.
const rhdMaxBytes = 64 << 10

// chooseAlgo picks the allreduce algorithm for n bytes across size ranks.
func chooseAlgo(forced Algo, bytes, size int) Algo {
	if forced != AlgoAuto {
		return forced
	}
	if bytes <= rhdMaxBytes {
		return AlgoRHD
	}
	return AlgoRing
}

// AllReduce replaces x ([n] float32, same n on every rank) by op over all ranks' x.
func (g *Group) AllReduce(x []float32, op Op) error {
	return g.wait(func() *Work { return g.AllReduceAsync(x, op) })
}

// AllReduceAsync starts an AllReduce; x must not be touched until Wait returns.
func (g *Group) AllReduceAsync(x []float32, op Op) *Work {
	return g.AllReduceAlgoAsync(x, op, g.opts.Algo)
}

// AllReduceAlgoAsync is AllReduceAsync with the algorithm forced for this call (AlgoAuto: the
// group's choice rules).
func (g *Group) AllReduceAlgoAsync(x []float32, op Op, algo Algo) *Work {
	algo = chooseAlgo(algo, 4*len(x), len(g.ranks))
	return g.submit("allreduce", fmt.Sprintf("float32[%d] %s %s", len(x), op, algo), func() error {
		if op < Sum || op > Min {
			return fmt.Errorf("unknown reduction %v", op)
		}
		if len(g.ranks) == 1 || len(x) == 0 {
			return nil
		}
		switch algo {
		case AlgoRing:
			return g.ringAllReduce(x, op)
		case AlgoTree:
			if err := g.treeReduce(x, 0, op); err != nil {
				return err
			}
			return g.treeBroadcast(f32bytes(x), 0)
		case AlgoRHD:
			return g.rhdAllReduce(x, op)
		}
		return fmt.Errorf("unknown algorithm %v", algo)
	})
}

// sendRecv sends sb to group rank to while recvFn runs; both must finish. A shared-memory
// send that fits in the ring's free slots is done first, on this goroutine.
func (g *Group) sendRecv(to int, sb []byte, recvFn func() error) error {
	if len(sb) == 0 {
		return recvFn()
	}
	if t, ok := g.tr.(*shmTransport); ok {
		if sent, err := t.sendNow(to, sb); err != nil {
			return err
		} else if sent {
			return recvFn()
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- g.tr.send(to, sb) }()
	rerr := recvFn()
	if rerr != nil {
		g.tr.abort() // unblock the send; the group is failing anyway
		<-errc
		return rerr
	}
	return <-errc
}

// segments splits count elements into n nearly equal [start, end) ranges.
func segments(count, n int) []int {
	off := make([]int, n+1)
	for i := range off {
		off[i] = i * count / n
	}
	return off
}

func mod(a, n int) int { return ((a % n) + n) % n }
