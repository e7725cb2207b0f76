// The benchmark's per-collective cases: buffers sized as nccl-tests sizes them (the "size" of
// all-gather, reduce-scatter and all-to-all is the whole n-rank buffer), inputs of small
// integers so every float32 sum is exact, and a check of every output element.
package cclbench

import "github.com/llmcloud/llmcloud/comm"

type benchCase struct {
	op           string
	g            *comm.Group
	algo         comm.Algo
	n, r         int
	bytes, count int // reported size and float32 count
	redop, root  string
	src, dst     []float32
}

// val is rank r's element i of block b: small integers, exact in any sum of a few ranks.
func val(r, b, i int) float32 { return float32((r+1)*(i%61+1) + 100*b) }

func newCase(op string, size int, g *comm.Group, algo comm.Algo) *benchCase {
	n := g.Size()
	c := &benchCase{op: op, g: g, algo: algo, n: n, r: g.Rank(), redop: "none", root: "-"}
	per := size / 4 // float32 elements
	switch op {
	case "allgather", "reducescatter", "alltoall":
		per = per / n * n // whole blocks
	}
	c.count, c.bytes = per, 4*per
	switch op {
	case "allreduce", "reduce":
		c.redop = "sum"
		c.src, c.dst = make([]float32, per), make([]float32, per)
	case "broadcast":
		c.src, c.dst = make([]float32, per), make([]float32, per)
	case "allgather":
		c.src, c.dst = make([]float32, per/n), make([]float32, per)
	case "reducescatter":
		c.redop = "sum"
		c.src, c.dst = make([]float32, per), make([]float32, per/n)
	case "alltoall", "sendrecv":
		c.src, c.dst = make([]float32, per), make([]float32, per)
	}
	if op == "broadcast" || op == "reduce" {
		c.root = "0"
	}
	for i := range c.src {
		c.src[i] = val(c.r, c.block(i), i)
	}
	return c
}

// block is the block of src element i (all-to-all: the destination rank).
func (c *benchCase) block(i int) int {
	if c.op == "alltoall" {
		return i / (len(c.src) / c.n)
	}
	return 0
}

// prepare resets the output (untimed): in-place collectives start from the input again.
func (c *benchCase) prepare() {
	switch c.op {
	case "allreduce", "reduce":
		copy(c.dst, c.src)
	case "broadcast":
		if c.r == 0 {
			copy(c.dst, c.src)
		} else {
			clear(c.dst)
		}
	default:
		clear(c.dst)
	}
}

func (c *benchCase) run() error {
	g := c.g
	switch c.op {
	case "allreduce":
		return g.AllReduceAlgoAsync(c.dst, comm.Sum, c.algo).Wait()
	case "reduce":
		return g.Reduce(c.dst, 0, comm.Sum)
	case "broadcast":
		return g.Broadcast(comm.AsBytes(c.dst), 0)
	case "allgather":
		return g.AllGather(comm.AsBytes(c.dst), comm.AsBytes(c.src))
	case "reducescatter":
		return g.ReduceScatter(c.dst, c.src, comm.Sum)
	case "alltoall":
		return g.AllToAll(comm.AsBytes(c.dst), comm.AsBytes(c.src))
	case "sendrecv":
		return g.SendRecv(comm.AsBytes(c.src), (c.r+1)%c.n, comm.AsBytes(c.dst), (c.r+c.n-1)%c.n)
	}
	return nil
}

// sumOver is the sum of val over all ranks.
func (c *benchCase) sumOver(b, i int) float32 {
	var s float32
	for r := range c.n {
		s += val(r, b, i)
	}
	return s
}

// check counts the wrong elements of this rank's output.
func (c *benchCase) check() int64 {
	var wrong int64
	want := func(i int) float32 { return 0 }
	switch c.op {
	case "allreduce":
		want = func(i int) float32 { return c.sumOver(0, i) }
	case "reduce":
		if c.r != 0 {
			want = func(i int) float32 { return c.src[i] }
		} else {
			want = func(i int) float32 { return c.sumOver(0, i) }
		}
	case "broadcast":
		want = func(i int) float32 { return val(0, 0, i) }
	case "allgather":
		k := len(c.src)
		want = func(i int) float32 { return val(i/k, 0, i%k) }
	case "reducescatter":
		k := len(c.dst)
		want = func(i int) float32 { return c.sumOver(0, c.r*k+i) }
	case "alltoall":
		k := len(c.dst) / c.n
		// Block j of dst came from rank j, which addressed it (block r of its src) to us.
		want = func(i int) float32 { return val(i/k, c.r, c.r*k+i%k) }
	case "sendrecv":
		want = func(i int) float32 { return val((c.r+c.n-1)%c.n, 0, i) }
	}
	for i, v := range c.dst {
		if v != want(i) {
			wrong++
		}
	}
	return wrong
}
