// This file runs moe for a step of one row (single-stream decode) outside batch-invariant
// mode: the row's experts_used experts, and the shared expert, read only their own weights,
// with as few pool jobs as the kernels allow. Every gate and up matrix (the chosen experts',
// the shared expert's, and the shared expert's gate row) multiplies the same row, so they run
// as one MatMulShared: the row is quantized once and all their rows are split across the
// workers in one job (the one-row GEMV kernels), instead of a job and a quantization per
// expert. The down matrices follow as one MatMulEach (each on its own expert's hidden row,
// all their rows again one job); the results are added in ascending expert
// order and the shared expert last, as run adds them, so a decode row differs from the same
// row in a batch only by the GEMV kernels' rounding (as for the dense matmuls).
package exec

import (
	"math"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// decode computes out (one row of D) from x (one row) and adds the row's choices to the loads.
func (o *moeOp) decode(p *Program, x, out []float32) error {
	E, F, D, k := o.e, o.f, o.d, o.k
	o.logits, o.wts = grow(o.logits, E), grow(o.wts, k)
	if cap(o.sel) < k {
		o.sel, o.order = make([]int, k), make([]int, k)
	}
	o.sel = o.sel[:k]
	if err := o.routerRow(p, x); err != nil {
		return err
	}
	o.route(o.logits, o.sel, o.wts)
	// Ascending expert order, the weights with them (k is small: insertion sort).
	for i := 1; i < k; i++ {
		for j := i; j > 0 && o.sel[j] < o.sel[j-1]; j-- {
			o.sel[j], o.sel[j-1] = o.sel[j-1], o.sel[j]
			o.wts[j], o.wts[j-1] = o.wts[j-1], o.wts[j]
		}
	}
	held := o.sel[:0] // the chosen experts this rank holds (all of them without expert parallelism)
	for j, e := range o.sel {
		o.loads[e]++
		if o.gate[e] != nil {
			o.wts[len(held)] = o.wts[j]
			held = append(held, e)
		}
	}
	o.sel, k = held, len(held)
	o.g, o.u, o.ys = grow(o.g, k*F), grow(o.u, k*F), grow(o.ys, k*D)
	outs, ws := o.outsBuf[:0], o.wsBuf[:0]
	for j, e := range o.sel {
		outs = append(outs, o.g[j*F:(j+1)*F], o.u[j*F:(j+1)*F])
		ws = append(ws, o.gate[e], o.up[e])
	}
	if o.sGate != nil {
		Fs := o.sf
		o.sg, o.su, o.sy = grow(o.sg, Fs), grow(o.su, Fs), grow(o.sy, D)
		outs, ws = append(outs, o.sg, o.su), append(ws, o.sGate, o.sUp)
		if o.sInp != nil {
			o.sl = grow(o.sl, 1)
			outs, ws = append(outs, o.sl), append(ws, o.sInp)
		}
	}
	var err error
	if len(ws) > 0 {
		err = p.pool.MatMulShared(outs, x, ws, 1)
	}
	clear(outs)
	clear(ws)
	outs, ws = outs[:0], ws[:0]
	if err != nil {
		o.outsBuf, o.wsBuf = outs[:2], ws[:2] // run assigns [0] and [1]
		return err
	}
	// The down matrices, each on its expert's hidden row, as one job.
	xs := o.xsBuf[:0]
	for j, e := range o.sel {
		g := o.g[j*F : (j+1)*F]
		kernels.SwiGLU(g, g, o.u[j*F:(j+1)*F])
		xs, outs, ws = append(xs, g), append(outs, o.ys[j*D:(j+1)*D]), append(ws, o.down[e])
	}
	if o.sGate != nil {
		kernels.SwiGLU(o.sg, o.sg, o.su)
		xs, outs, ws = append(xs, o.sg), append(outs, o.sy), append(ws, o.sDown)
	}
	if len(ws) > 0 {
		err = p.pool.MatMulEach(outs, xs, ws)
	}
	clear(xs)
	clear(outs)
	clear(ws)
	o.xsBuf, o.outsBuf, o.wsBuf = xs[:0], outs[:2], ws[:2]
	if err != nil {
		return err
	}
	clear(out[:D])
	for j := range o.sel {
		w, src := o.wts[j], o.ys[j*D:(j+1)*D]
		for i, v := range src {
			out[i] += w * v
		}
	}
	if o.sGate != nil {
		s := float32(1)
		if o.sInp != nil {
			s = float32(1 / (1 + math.Exp(-float64(o.sl[0]))))
		}
		for i, v := range o.sy {
			out[i] += s * v
		}
	}
	return nil
}

// routerRow computes the router logits of one row into o.logits: an F32 router (every
// family's, a few dozen rows) by dot products on the calling goroutine, no pool job.
func (o *moeOp) routerRow(p *Program, x []float32) error {
	if o.router.Type == tensor.F32 {
		if r := kernels.F32View(o.router.Data); r != nil {
			D := o.d
			for e := range o.logits {
				o.logits[e] = kernels.Dot(x[:D], r[e*D:(e+1)*D])
			}
			return nil
		}
	}
	return p.pool.MatMul(o.logits, x, o.router, 1)
}
