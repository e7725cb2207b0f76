// Recursive halving-doubling allreduce (Rabenseifner; Thakur, Rabenseifner and Gropp 2005):
// among the largest power of two p <= n ranks, log2(p) halving steps exchange and reduce half
// of the current range with the partner at distance p/2, p/4, ... (a reduce-scatter), then
// log2(p) doubling steps gather the ranges back. The n-p extra ranks first fold their data
// into a neighbour and get the result back at the end.
package comm

func (g *Group) rhdAllReduce(x []float32, op Op) error {
	n, r := len(g.ranks), g.rank
	p := 1
	for p*2 <= n {
		p *= 2
	}
	rem := n - p
	// Fold: among the first 2*rem ranks, even ranks hand their data to the odd one above.
	nr := -1
	switch {
	case r < 2*rem && r%2 == 0:
		if err := g.tr.send(r+1, f32bytes(x)); err != nil {
			return err
		}
		return g.tr.recv(r+1, f32bytes(x))
	case r < 2*rem:
		if err := g.tr.recvReduce(r-1, x, op); err != nil {
			return err
		}
		nr = r / 2
	default:
		nr = r - rem
	}
	real := func(v int) int {
		if v < rem {
			return 2*v + 1
		}
		return v + rem
	}
	type span struct{ lo, hi int }
	var stack []span
	lo, hi := 0, len(x)
	for mask := p / 2; mask >= 1; mask /= 2 {
		partner := real(nr ^ mask)
		mid := lo + (hi-lo)/2
		keep, give := span{lo, mid}, span{mid, hi}
		if nr&mask != 0 {
			keep, give = give, keep
		}
		err := g.sendRecv(partner, f32bytes(x[give.lo:give.hi]), func() error {
			if keep.hi == keep.lo {
				return nil
			}
			return g.tr.recvReduce(partner, x[keep.lo:keep.hi], op)
		})
		if err != nil {
			return err
		}
		stack = append(stack, span{lo, hi})
		lo, hi = keep.lo, keep.hi
	}
	for mask := 1; mask < p; mask *= 2 {
		partner := real(nr ^ mask)
		outer := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		other := span{outer.lo, lo}
		if lo == outer.lo {
			other = span{hi, outer.hi}
		}
		err := g.sendRecv(partner, f32bytes(x[lo:hi]), func() error {
			if other.hi == other.lo {
				return nil
			}
			return g.tr.recv(partner, f32bytes(x[other.lo:other.hi]))
		})
		if err != nil {
			return err
		}
		lo, hi = outer.lo, outer.hi
	}
	if r < 2*rem {
		return g.tr.send(r-1, f32bytes(x))
	}
	return nil
}
