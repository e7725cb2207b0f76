// This file runs moe's routed experts for a step of many rows with the experts, not their
// rows, split across the pool's workers: each worker takes the next expert (most rows first)
// and runs its gather, gate/up, SwiGLU and down on its own goroutine with the single-threaded
// pool, its results kept per (row, choice), then the rows' outputs are summed in ascending
// expert order as run sums them. At a batched decode step (64 rows, 16 experts of which each
// gets a few rows) the per-expert matmuls are small, and a job per matmul split across the
// workers would be a barrier per matmul, 32 per layer; here a layer's experts are one job.
// Every expert's weights are still read once per step. Batch-invariant programs keep run's
// path (the invariant matmuls on the whole pool), and so do Q8_0/Q4_0 experts (below).
package exec

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// moeScratch is one worker's buffers.
type moeScratch struct {
	xs, g, u, ys []float32
	outs         [][]float32
	ws           []*tensor.Tensor
}

// expertsParallel reports whether the step's routed experts should run split across the
// workers: enough experts with rows for every worker to have several, and none of them with
// more than a worker's fair share of the (row, choice) pairs. Q8_0 and Q4_0 experts (those
// with the loader's prefill packs, model/experts_pack.go) keep run's path: split this way
// they ran slower, not faster (docs/performance.md, "Mixture of experts").
func (o *moeOp) expertsParallel(p *Program, pairs int) bool {
	w := p.pool.Workers()
	if p.invariant || w < 2 || o.packed {
		return false
	}
	active, most := 0, 0
	for e, c := range o.count {
		if c > 0 && o.gate[e] != nil {
			active++
			most = max(most, c)
		}
	}
	return active >= 2*w && most*w <= pairs
}

// runParallel computes the routed experts' sum into out (n rows; routing, counts and order
// done).
func (o *moeOp) runParallel(p *Program, x, out []float32, n int) error {
	E, D, k := o.e, o.d, o.k
	W := p.pool.Workers()
	if len(o.scratch) < W {
		o.scratch = make([]moeScratch, W)
	}
	o.yAll = grow(o.yAll, n*k*D)
	o.byCount = o.byCount[:0]
	for e := 0; e < E; e++ {
		if o.count[e] > 0 {
			o.loads[e] += uint64(o.count[e])
			if o.gate[e] != nil { // not another rank's expert
				o.byCount = append(o.byCount, e)
			}
		}
	}
	slices.SortStableFunc(o.byCount, func(a, b int) int { return o.count[b] - o.count[a] })
	var next atomic.Int32
	var mu sync.Mutex
	var firstErr error
	p.pool.For(W, 1, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(o.byCount) {
					break
				}
				if err := o.expert(&o.scratch[w], o.byCount[j], x); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}
	})
	if firstErr != nil {
		return firstErr
	}
	// Each row's contributions in ascending expert order (a row's experts are distinct).
	clear(out[:n*D])
	for r := 0; r < n; r++ {
		dst, prev := out[r*D:(r+1)*D], -1
		for range k {
			best := -1
			for j := r * k; j < (r+1)*k; j++ {
				if e := o.sel[j]; e > prev && (best < 0 || e < o.sel[best]) {
					best = j
				}
			}
			prev = o.sel[best]
			if o.gate[prev] == nil {
				continue
			}
			w, src := o.wts[best], o.yAll[best*D:(best+1)*D]
			for i, v := range src {
				dst[i] += w * v
			}
		}
	}
	return nil
}

// expert runs expert e over its rows of x on the calling goroutine (the single-threaded pool)
// with the scratch s, its results into o.yAll by (row, choice).
func (o *moeOp) expert(s *moeScratch, e int, x []float32) error {
	c, F, D, k := o.count[e], o.f, o.d, o.k
	idx := o.order[o.start[e]:o.start[e+1]]
	s.xs, s.g, s.u, s.ys = grow(s.xs, c*D), grow(s.g, c*F), grow(s.u, c*F), grow(s.ys, c*D)
	for i, sc := range idx {
		r := sc / k
		copy(s.xs[i*D:(i+1)*D], x[r*D:(r+1)*D])
	}
	s.outs, s.ws = append(s.outs[:0], s.g, s.u), append(s.ws[:0], o.gate[e], o.up[e])
	err := kernels.Serial.MatMulShared(s.outs, s.xs, s.ws, c)
	clear(s.outs)
	clear(s.ws)
	if err != nil {
		return err
	}
	for i := 0; i < c; i++ {
		kernels.SwiGLU(s.g[i*F:(i+1)*F], s.g[i*F:(i+1)*F], s.u[i*F:(i+1)*F])
	}
	if err := kernels.Serial.MatMul(s.ys, s.g, o.down[e], c); err != nil {
		return err
	}
	for i, sc := range idx {
		copy(o.yAll[sc*D:(sc+1)*D], s.ys[i*D:(i+1)*D])
	}
	return nil
}
