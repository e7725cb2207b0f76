// This file applies adapters at run time: for a matmul y = x·Wᵀ over a batch whose rows belong
// to sequences with different adapters, each segment (a sequence's contiguous rows) with
// adapter s gets y += scale_s·(x·A_sᵀ)·B_sᵀ (S-LoRA/Punica's segmented low-rank products). Each
// row is computed from that row alone in a fixed order (dot products of A's rows, then of B's
// rows with the rank-r intermediate), so a sequence's output does not depend on the other
// sequences of the batch, their adapters, or how rows are split over threads.
package lora

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
)

// MaxRank is the largest rank run-time adapters may have (the row kernel's scratch).
const MaxRank = 512

// addRows adds p's update to rows [lo, hi) of out ([m, p.Out]) from x ([m, p.In]).
func (p *Pair) addRows(out, x []float32, lo, hi int) {
	var buf [MaxRank]float32
	t := buf[:p.Rank]
	for i := lo; i < hi; i++ {
		xr := x[i*p.In : (i+1)*p.In]
		for j := range t {
			t[j] = p.Scale * kernels.Dot(xr, p.A[j*p.In:(j+1)*p.In])
		}
		or := out[i*p.Out : (i+1)*p.Out]
		for o := range or {
			or[o] += kernels.Dot(t, p.B[o*p.Rank:(o+1)*p.Rank])
		}
	}
}

// addRowsRef is addRows in plain sequential Go (the reference the kernel is tested against).
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

// applySegs adds, for every segment, its adapter's pair of weight (looked up by pairOf) to
// out's rows; pool (nil: serial) splits the rows when the work is large enough.
func applySegs(pool *kernels.Pool, segs []exec.LoRASeg, pairOf func(uint32) *Pair, weight string, out, x []float32, m, k, n int) error {
	for _, s := range segs {
		if s.Adapter == 0 {
			continue
		}
		p := pairOf(s.Adapter)
		if p == nil {
			continue // the adapter does not adapt this weight
		}
		if p.In != k || p.Out != n {
			return fmt.Errorf("lora: %s: adapter %d's update is [%d %d], the matmul [%d %d]", weight, s.Adapter, p.Out, p.In, n, k)
		}
		if s.Start < 0 || s.End > m || s.Start > s.End {
			return fmt.Errorf("lora: %s: segment rows [%d, %d) outside the batch of %d", weight, s.Start, s.End, m)
		}
		rows := s.End - s.Start
		if pool == nil || rows*p.Rank*(p.In+p.Out) < 1<<16 || rows == 1 {
			p.addRows(out, x, s.Start, s.End)
			continue
		}
		pool.For(rows, 1, func(lo, hi int) { p.addRows(out, x, s.Start+lo, s.Start+hi) })
	}
	return nil
}
