// Package cclbench measures the collectives of package comm the way nccl-tests does: for each
// message size, warm-up iterations, then timed iterations, each started after a barrier (as
// OSU's benchmarks do, so one rank's untimed checking never counts as the other's time) and
// each result checked element by element; one table row per size with the mean and median time
// of the slowest rank, algorithm bandwidth and bus bandwidth (algbw times the collective's
// nccl-tests factor) and the number of wrong elements. launch.go starts the
// ranks as local child processes when no launcher did.
package cclbench

import (
	"errors"
	"fmt"
	"io"
	"slices"
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
	Seconds      float64 // mean over iterations of the slowest rank's time
	P50Seconds   float64 // median over iterations of the slowest rank's time
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
		fmt.Fprintf(out, "%12s %12s %6s %6s %5s %12s %10s %10s %8s %12s\n",
			"size(B)", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", "p50(us)")
	}
	var rows []Row
	var failed bool
	for size := c.MinBytes; size <= c.MaxBytes; size *= c.StepFactor {
		cs := newCase(c.Op, size, g, c.Algo)
		for range c.Warmup {
			cs.prepare()
			if err := g.Barrier(); err != nil {
				return rows, err
			}
			if err := cs.run(); err != nil {
				return rows, err
			}
		}
		times := make([]float32, c.Iters) // seconds, per iteration
		var wrong int64
		for it := range c.Iters {
			cs.prepare()
			if err := g.Barrier(); err != nil {
				return rows, err
			}
			start := time.Now()
			if err := cs.run(); err != nil {
				return rows, err
			}
			times[it] = float32(time.Since(start).Seconds())
			wrong += cs.check()
		}
		// The slowest rank's time of each iteration and the total of wrong elements.
		if err := g.AllReduce(times, comm.Max); err != nil {
			return rows, err
		}
		w := []float32{float32(wrong)}
		if err := g.AllReduce(w, comm.Sum); err != nil {
			return rows, err
		}
		mean, p50 := meanMedian(times)
		r := Row{Bytes: cs.bytes, Count: cs.count, Seconds: mean, P50Seconds: p50, Wrong: int64(w[0])}
		if r.Seconds > 0 {
			r.AlgBW = float64(r.Bytes) / r.Seconds / 1e9
			r.BusBW = r.AlgBW * BusFactor(c.Op, n)
		}
		failed = failed || r.Wrong != 0
		rows = append(rows, r)
		if g.Rank() == 0 {
			fmt.Fprintf(out, "%12d %12d %6s %6s %5s %12.1f %10.3f %10.3f %8d %12.1f\n",
				r.Bytes, r.Count, "float", cs.redop, cs.root, r.Seconds*1e6, r.AlgBW, r.BusBW, r.Wrong, r.P50Seconds*1e6)
		}
	}
	if failed {
		return rows, ErrWrong
	}
	return rows, nil
}

// meanMedian returns the mean and the median of ts (seconds; ts is sorted in place).
func meanMedian(ts []float32) (mean, median float64) {
	slices.Sort(ts)
	for _, t := range ts {
		mean += float64(t)
	}
	mean /= float64(len(ts))
	median = float64(ts[len(ts)/2])
	if len(ts)%2 == 0 {
		median = (median + float64(ts[len(ts)/2-1])) / 2
	}
	return mean, median
}
