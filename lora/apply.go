// This file applies adapters at run time: for a matmul y = x·Wᵀ over a batch whose rows belong
// to sequences with different adapters, each segment (a sequence's contiguous rows) with
// adapter s gets y += scale_s·(x·A_sᵀ)·B_sᵀ (S-LoRA/Punica's segmented low-rank products). The
// rows of one adapter (across segments) are done together, reading its A and Bᵀ once for all of
// them (addRows), but each row's bits come from that row alone in a fixed order (dot products
// with A's rows four at a time, then an FMA chain over Bᵀ's rows per output column), so a
// sequence's output does not depend on the other sequences of the batch, their adapters, or how
// rows are split over threads. Not a GEMM: at ranks 8-64 the products are thin, and on the float
// GEMM kernels (measured on the default model) they cost 4x more than per-row dots and axpys.
package lora

import (
	"fmt"
	"slices"
	"sync"

	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
)

// MaxRank is the largest rank run-time adapters may have.
const MaxRank = 512

// prepare makes Bᵀ [Rank, Out], the layout of the run-time kernel's axpys.
func (p *Pair) prepare() {
	if p.bT != nil {
		return
	}
	bT := make([]float32, p.Rank*p.Out)
	for o := 0; o < p.Out; o++ {
		for j := 0; j < p.Rank; j++ {
			bT[j*p.Out+o] = p.B[o*p.Rank+j]
		}
	}
	p.bT = bT
}

// addRowsRef adds p's update to rows [lo, hi) of out ([m, p.Out]) from x ([m, p.In]) in
// plain sequential Go, in float64 (the reference the kernels are tested against).
func (p *Pair) addRowsRef(out, x []float32, lo, hi int) {
	t := make([]float64, p.Rank)
	for i := lo; i < hi; i++ {
		for j := range t {
			var s float64
			for c := 0; c < p.In; c++ {
				s += float64(x[i*p.In+c]) * float64(p.A[j*p.In+c])
			}
			t[j] = float64(p.Scale) * s
		}
		for o := 0; o < p.Out; o++ {
			var s float64
			for j := range t {
				s += t[j] * float64(p.B[o*p.Rank+j])
			}
			out[i*p.Out+o] += float32(s)
		}
	}
}

// job is one adapter's share of a matmul: its pair and its segments' rows.
type job struct {
	p    *Pair
	id   uint32
	rows int
	nseg int
	err  error
}

// applySegs adds, for every adapter of segs, its pair of weight (looked up by pairOf) to the
// rows of its segments. Several adapters run in parallel (one job each; their rows are
// disjoint), one adapter's long segment (a prefill chunk) is split by rows.
func applySegs(pool *kernels.Pool, segs []exec.LoRASeg, pairOf func(uint32) *Pair, weight string, out, x []float32, m, k, n int) error {
	if pool == nil {
		pool = kernels.Default
	}
	var jobsBuf [16]job
	jobs := jobsBuf[:0]
	for _, s := range segs {
		if s.Start < 0 || s.End > m || s.Start > s.End {
			return fmt.Errorf("lora: %s: segment rows [%d, %d) outside the batch of %d", weight, s.Start, s.End, m)
		}
		if s.Adapter == 0 || s.End == s.Start {
			continue
		}
		j := slices.IndexFunc(jobs, func(j job) bool { return j.id == s.Adapter })
		if j < 0 {
			p := pairOf(s.Adapter)
			if p != nil && (p.In != k || p.Out != n) {
				return fmt.Errorf("lora: %s: adapter %d's update is [%d %d], the matmul [%d %d]", weight, s.Adapter, p.Out, p.In, n, k)
			}
			jobs = append(jobs, job{p: p, id: s.Adapter})
			j = len(jobs) - 1
		}
		jobs[j].rows += s.End - s.Start
		jobs[j].nseg++
	}
	jobs = slices.DeleteFunc(jobs, func(j job) bool { return j.p == nil }) // adapters that do not adapt weight
	switch len(jobs) {
	case 0:
		return nil
	case 1:
		jobs[0].run(pool, segs, out, x, k, n)
	default:
		pool.For(len(jobs), 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				jobs[i].run(nil, segs, out, x, k, n)
			}
		})
	}
	for _, j := range jobs {
		if j.err != nil {
			return fmt.Errorf("lora: %s: %w", weight, j.err)
		}
	}
	return nil
}

// run computes the job's update and adds it to its rows of out: the rows of all its segments
// gathered (in decode, one row per sequence), split over pool's workers when there are enough.
func (j *job) run(pool *kernels.Pool, segs []exec.LoRASeg, out, x []float32, k, n int) {
	p := j.p
	p.prepare()
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	rows := sc.rows[:0]
	for _, t := range segs {
		if t.Adapter != j.id {
			continue
		}
		for i := t.Start; i < t.End; i++ {
			rows = append(rows, int32(i))
		}
	}
	sc.rows = rows
	if pool != nil && len(rows)*p.Rank*(k+n) >= 1<<17 {
		pool.For(len(rows), 1, func(lo, hi int) {
			s := scratchPool.Get().(*scratch)
			p.addRows(out, x, rows[lo:hi], k, n, &s.t)
			scratchPool.Put(s)
		})
		return
	}
	p.addRows(out, x, rows, k, n, &sc.t)
}

// scratch is a job's buffers (pooled: a stack array would escape to the heap, one allocation per
// adapter and matmul).
type scratch struct {
	t    [rowBlock]float32
	rows []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// rowBlock is the number of floats of addRows' rank-r intermediates (a block of rows at a time).
const rowBlock = 4096

// addRows adds p's update to the given rows of out ([m, n]) from x ([m, k]), Punica/S-LoRA
// style: A and Bᵀ are read once for a block of rows. Per row, the rank-r intermediate
// t = scale·(A·x) (A's rows four at a time outer, the rows inner: each 4-row group of A is
// loaded once and reused from cache for every row), then out += Σ_j t_j·Bᵀ_j (Bᵀ's columns in
// chunks outer, the rows inner, each output chunk kept in registers over all j). A row's bits
// depend only on the row, A and B (kernels.LowRankDots and LowRankAxpys): batch invariant.
func (p *Pair) addRows(out, x []float32, rows []int32, k, n int, buf *[rowBlock]float32) {
	r := p.Rank
	per := max(1, rowBlock/r)
	for len(rows) > 0 {
		blk := rows[:min(per, len(rows))]
		rows = rows[len(blk):]
		t := buf[:len(blk)*r]
		for j0 := 0; j0 < r; j0 += 4 {
			j1 := min(j0+4, r)
			a := p.A[j0*k : j1*k]
			for b, i := range blk {
				kernels.LowRankDots(t[b*r+j0:b*r+j1], a, x[int(i)*k:int(i+1)*k], k)
			}
		}
		for b := range blk {
			kernels.Scale(t[b*r:(b+1)*r], p.Scale)
		}
		const chunk = 256 // a multiple of 8 (kernels.LowRankAxpys' pieces)
		for c := 0; c < n; c += chunk {
			c1 := min(c+chunk, n)
			for b, i := range blk {
				kernels.LowRankAxpys(out[int(i)*n+c:int(i)*n+c1], t[b*r:(b+1)*r], p.bT[c:], n)
			}
		}
	}
}
