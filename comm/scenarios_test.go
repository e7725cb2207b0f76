// Scenarios run by each rank process (see launch_test.go): every collective and algorithm on
// odd sizes with exact checks, sub-groups and async handles; a long allreduce loop for the
// kill test; a rank that stops calling collectives for the hang test.
package comm

import (
	"fmt"
	"os"
	"time"
)

func runScenario(name string) int {
	env, err := EnvFromOS()
	if err != nil {
		fmt.Println("ERROR:", err)
		return 2
	}
	opts := DefaultOptions()
	if s := os.Getenv("LLMCLOUD_COMM_TEST_TIMEOUT"); s != "" {
		opts.Timeout, _ = time.ParseDuration(s)
	}
	opts.ChunkBytes = 16 << 10 // small pieces: many chunks even at test sizes
	opts.ShmSlotBytes = 8 << 10
	opts.ShmSlots = 4
	g, err := Init(env, opts, nil, nil)
	if err != nil {
		fmt.Println("ERROR:", err)
		return 1
	}
	defer g.Close()
	switch name {
	case "collectives":
		err = scenarioCollectives(g)
	case "kill":
		err = scenarioLoop(g)
	case "hang":
		err = scenarioHang(g)
	case "subhang":
		err = scenarioSubHang(g)
	default:
		err = fmt.Errorf("unknown scenario %q", name)
	}
	if err != nil {
		fmt.Println("ERROR:", err)
		return 1
	}
	fmt.Println("OK")
	return 0
}

// pattern is rank r's element i: small integers, so every sum is exact in float32.
func pattern(r, i int) float32 { return float32((r + 1) * (i%13 + 1)) }

func expectReduced(op Op, ranks []int, i int) float32 {
	var acc float32
	for k, r := range ranks {
		v := pattern(r, i)
		switch {
		case k == 0:
			acc = v
		case op == Sum:
			acc += v
		case op == Max:
			acc = max(acc, v)
		case op == Min:
			acc = min(acc, v)
		}
	}
	return acc
}

func checkF32(what string, got []float32, want func(i int) float32) error {
	for i, v := range got {
		if w := want(i); v != w {
			return fmt.Errorf("%s: element %d of %d is %v, want %v", what, i, len(got), v, w)
		}
	}
	return nil
}

func checkBytes(what string, got []byte, want func(i int) byte) error {
	for i, v := range got {
		if w := want(i); v != w {
			return fmt.Errorf("%s: byte %d of %d is %d, want %d", what, i, len(got), v, w)
		}
	}
	return nil
}

func filled(r, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = pattern(r, i)
	}
	return x
}

func scenarioCollectives(g *Group) error {
	n, r := g.Size(), g.Rank()
	for _, algo := range []Algo{AlgoRing, AlgoTree, AlgoRHD, AlgoAuto} {
		for _, op := range []Op{Sum, Max, Min} {
			for _, count := range []int{0, 1, 3, 7, 1000, 4097, 65537, 300001} {
				if op != Sum && count > 5000 {
					continue
				}
				x := filled(r, count)
				if err := g.AllReduceAlgoAsync(x, op, algo).Wait(); err != nil {
					return err
				}
				what := fmt.Sprintf("allreduce %v %v [%d]", algo, op, count)
				if err := checkF32(what, x, func(i int) float32 { return expectReduced(op, g.Ranks(), i) }); err != nil {
					return err
				}
			}
		}
	}
	byteOf := func(src, i int) byte { return byte(src*31 + i*7) }
	for root := range n {
		b := make([]byte, 100003)
		if r == root {
			for i := range b {
				b[i] = byteOf(root, i)
			}
		}
		if err := g.Broadcast(b, root); err != nil {
			return err
		}
		if err := checkBytes(fmt.Sprintf("broadcast root %d", root), b, func(i int) byte { return byteOf(root, i) }); err != nil {
			return err
		}
	}
	x := filled(r, 70001)
	if err := g.Reduce(x, n-1, Sum); err != nil {
		return err
	}
	want := func(i int) float32 { return pattern(r, i) } // non-roots: unchanged
	if r == n-1 {
		want = func(i int) float32 { return expectReduced(Sum, g.Ranks(), i) }
	}
	if err := checkF32("reduce", x, want); err != nil {
		return err
	}
	const cnt = 1001
	src := filled(r, n*cnt)
	dst := make([]float32, cnt)
	if err := g.ReduceScatter(dst, src, Sum); err != nil {
		return err
	}
	if err := checkF32("reducescatter", dst, func(i int) float32 { return expectReduced(Sum, g.Ranks(), r*cnt+i) }); err != nil {
		return err
	}
	const k = 333
	mine := make([]byte, k)
	for i := range mine {
		mine[i] = byteOf(r, i)
	}
	all := make([]byte, n*k)
	if err := g.AllGather(all, mine); err != nil {
		return err
	}
	if err := checkBytes("allgather", all, func(i int) byte { return byteOf(i/k, i%k) }); err != nil {
		return err
	}
	root := 1 % n
	gathered := make([]byte, n*k)
	if err := g.Gather(gathered, mine, root); err != nil {
		return err
	}
	if r == root {
		if err := checkBytes("gather", gathered, func(i int) byte { return byteOf(i/k, i%k) }); err != nil {
			return err
		}
	}
	part := make([]byte, k)
	if err := g.Scatter(part, gathered, root); err != nil {
		return err
	}
	if err := checkBytes("scatter", part, func(i int) byte { return byteOf(r, i) }); err != nil {
		return err
	}
	const blk = 77
	a2aSrc, a2aDst := make([]byte, n*blk), make([]byte, n*blk)
	for i := range a2aSrc {
		a2aSrc[i] = byte(r*50 + (i/blk)*7 + i%blk) // block j is addressed to rank j
	}
	if err := g.AllToAll(a2aDst, a2aSrc); err != nil {
		return err
	}
	if err := checkBytes("alltoall", a2aDst, func(i int) byte { return byte((i/blk)*50 + r*7 + i%blk) }); err != nil {
		return err
	}
	msg := make([]byte, 12345)
	if r == 0 {
		for i := range msg {
			msg[i] = byteOf(9, i)
		}
		if err := g.Send(msg, n-1); err != nil {
			return err
		}
	} else if r == n-1 {
		if err := g.Recv(msg, 0); err != nil {
			return err
		}
		if err := checkBytes("recv", msg, func(i int) byte { return byteOf(9, i) }); err != nil {
			return err
		}
	}
	out, ring := make([]byte, 4099), make([]byte, 4099)
	for i := range out {
		out[i] = byteOf(r, i)
	}
	if err := g.SendRecv(out, mod(r+1, n), ring, mod(r-1, n)); err != nil {
		return err
	}
	if err := checkBytes("sendrecv", ring, func(i int) byte { return byteOf(mod(r-1, n), i) }); err != nil {
		return err
	}
	if err := g.Barrier(); err != nil {
		return err
	}
	// Async: three allreduces in flight at once, waited in reverse order.
	var xs [3][]float32
	var ws [3]*Work
	for i := range xs {
		xs[i] = filled(r, 5000+i)
		ws[i] = g.AllReduceAsync(xs[i], Sum)
	}
	for i := 2; i >= 0; i-- {
		if err := ws[i].Wait(); err != nil {
			return err
		}
		if err := checkF32("async allreduce", xs[i], func(j int) float32 { return expectReduced(Sum, g.Ranks(), j) }); err != nil {
			return err
		}
	}
	// A sub-group of the last and first ranks, in that order.
	members := []int{n - 1, 0}
	sub, err := g.NewGroup(members)
	if err != nil {
		return err
	}
	if sub != nil {
		defer sub.Close()
		y := filled(g.Ranks()[r], 9999)
		if err := sub.AllReduce(y, Sum); err != nil {
			return err
		}
		if err := checkF32("sub-group allreduce", y, func(i int) float32 { return expectReduced(Sum, members, i) }); err != nil {
			return err
		}
		if want := map[int]int{n - 1: 0, 0: 1}[r]; sub.Rank() != want {
			return fmt.Errorf("sub-group rank %d, want %d", sub.Rank(), want)
		}
	} else if r != 0 && r != n-1 {
		// not a member: fine
	} else {
		return fmt.Errorf("rank %d got no sub-group", r)
	}
	// Bad input: an error on the caller, and the group still works.
	if err := g.AllGather(make([]byte, 5), make([]byte, 3)); err == nil {
		return fmt.Errorf("allgather with a wrong dst size did not fail")
	}
	return g.Barrier()
}

// scenarioLoop runs large allreduces until something fails (the kill test kills a rank).
func scenarioLoop(g *Group) error {
	x := filled(g.Rank(), 1<<20)
	for it := 0; ; it++ {
		if err := g.AllReduce(x, Max); err != nil {
			return err
		}
		fmt.Printf("iter %d\n", it)
	}
}

// scenarioHang: rank 1 stops after a broadcast (collective #3); the others go on to an
// allreduce (#4) that times out.
func scenarioHang(g *Group) error {
	x := filled(g.Rank(), 1000)
	for range 2 {
		if err := g.AllReduce(x, Max); err != nil {
			return err
		}
	}
	if err := g.Broadcast(make([]byte, 64), 0); err != nil {
		return err
	}
	if g.Rank() == 1 {
		fmt.Println("HUNG")
		// Idle (no collectives) until a peer's timeout report aborts the group.
		for deadline := time.Now().Add(time.Minute); g.abortError() == nil && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Println("aborted by a peer:", g.abortError())
		return nil
	}
	return g.AllReduce(make([]float32, 1<<20), Sum)
}

// scenarioSubHang: ranks 0 and 1 form a sub-group; after one allreduce in it rank 1 hangs, so
// rank 0's next one times out there, while the world group itself never failed; rank 2 leaves
// at once.
func scenarioSubHang(g *Group) error {
	sub, err := g.NewGroup([]int{0, 1})
	if err != nil || sub == nil {
		return err
	}
	x := filled(g.Rank(), 1024)
	if err := sub.AllReduce(x, Sum); err != nil {
		return err
	}
	if g.Rank() == 1 {
		fmt.Println("hanging")
		time.Sleep(time.Minute)
	}
	return sub.AllReduce(x, Sum)
}
