// Package cclbench measures the collectives of package comm the way nccl-tests does: for each
// message size, warm-up iterations, then timed iterations, each result checked element by
// element; one table row per size with time, algorithm bandwidth and bus bandwidth (algbw times
// the collective's nccl-tests factor) and the number of wrong elements. launch.go starts the
// ranks as local child processes when no launcher did.
package cclbench

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/llmcloud/llmcloud/comm"
)

// Config is one benchmark run.
type Config struct {
	Op                 string // allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv
	MinBytes, MaxBytes int
	StepFactor         int
	Iters, Warmup      int
	Algo               comm.Algo // allreduce only
}

// Ops lists the collectives the benchmark knows.
var Ops = []string{"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv"}

// BusFactor is nccl-tests' bus-bandwidth factor of op across n ranks: busbw = algbw * factor,
// the fraction of the data each rank's link carries relative to an optimal algorithm.
func BusFactor(op string, n int) float64 {
	f := float64(n)
	switch op {
	case "allreduce":
		return 2 * (f - 1) / f
	case "allgather", "reducescatter", "alltoall":
		return (f - 1) / f
	}
	return 1 // broadcast, reduce, sendrecv
}

// Validate checks the configuration.
func (c Config) Validate() error {
	known := false
	for _, o := range Ops {
		known = known || o == c.Op
	}
	switch {
	case !known:
		return fmt.Errorf("unknown --op %q (want one of %v)", c.Op, Ops)
	case c.MinBytes < 1 || c.MaxBytes < c.MinBytes:
		return fmt.Errorf("need 1 <= --min-bytes <= --max-bytes, got %d, %d", c.MinBytes, c.MaxBytes)
	case c.StepFactor < 2:
		return fmt.Errorf("--step-factor must be >= 2, got %d", c.StepFactor)
	case c.Iters < 1 || c.Warmup < 0:
		return fmt.Errorf("need --iters >= 1 and --warmup >= 0")
	}
	return nil
}

// Row is one measured size.
type Row struct {
	Bytes, Count int
	Seconds      float64 // mean time of one collective (slowest rank's mean)
	AlgBW, BusBW float64 // GB/s (1e9 bytes per second)
	Wrong        int64   // wrong elements over all iterations and ranks
}

// ErrWrong is returned when any result was wrong.
var ErrWrong = errors.New("ccl bench: wrong results")

// Run measures every size on g; rank 0 writes the table to out (other ranks write nothing).
func Run(g *comm.Group, c Config, out io.Writer) ([]Row, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := g.Size()
	if c.Op == "sendrecv" && n < 2 {
		return nil, errors.New("sendrecv needs at least 2 ranks")
	}
	if g.Rank() == 0 {
		fmt.Fprintf(out, "# llmcloud ccl bench: op %s, %d ranks, transport %s, algo %s, iters %d, warmup %d\n",
			c.Op, n, g.Transport(), c.Algo, c.Iters, c.Warmup)
		fmt.Fprintf(out, "%12s %12s %6s %6s %5s %12s %10s %10s %8s\n",
			"size(B)", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")
	}
	var rows []Row
	var failed bool
	for size := c.MinBytes; size <= c.MaxBytes; size *= c.StepFactor {
		cs := newCase(c.Op, size, g, c.Algo)
		for range c.Warmup {
			cs.prepare()
			if err := cs.run(); err != nil {
				return rows, err
			}
		}
		var total time.Duration
		var wrong int64
		for range c.Iters {
			cs.prepare()
			start := time.Now()
			if err := cs.run(); err != nil {
				return rows, err
			}
			total += time.Since(start)
			wrong += cs.check()
		}
		// Slowest rank's mean time and the total of wrong elements, over all ranks.
		agg := []float32{float32(total.Seconds() / float64(c.Iters))}
		if err := g.AllReduce(agg, comm.Max); err != nil {
			return rows, err
		}
		w := []float32{float32(wrong)}
		if err := g.AllReduce(w, comm.Sum); err != nil {
			return rows, err
		}
		r := Row{Bytes: cs.bytes, Count: cs.count, Seconds: float64(agg[0]), Wrong: int64(w[0])}
		if r.Seconds > 0 {
			r.AlgBW = float64(r.Bytes) / r.Seconds / 1e9
			r.BusBW = r.AlgBW * BusFactor(c.Op, n)
		}
		failed = failed || r.Wrong != 0
		rows = append(rows, r)
		if g.Rank() == 0 {
			fmt.Fprintf(out, "%12d %12d %6s %6s %5s %12.1f %10.3f %10.3f %8d\n",
				r.Bytes, r.Count, "float", cs.redop, cs.root, r.Seconds*1e6, r.AlgBW, r.BusBW, r.Wrong)
		}
	}
	if failed {
		return rows, ErrWrong
	}
	return rows, nil
}
