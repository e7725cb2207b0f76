// This file runs swiglu_oai (graph/ops_swiglu_oai.go) element by element, split over the pool
// for large batches.
package exec

import "math"

type swigluOAIOp struct {
	g, u, out    int
	alpha, limit float32
}

func (o *swigluOAIOp) run(p *Program) error {
	g, u, out := p.f32(o.g), p.f32(o.u), p.f32(o.out)
	if len(out) < parallelMin {
		o.span(out, g, u)
		return nil
	}
	p.pool.For(len(out), 4096, func(lo, hi int) { o.span(out[lo:hi], g[lo:hi], u[lo:hi]) })
	return nil
}

func (o *swigluOAIOp) span(out, g, u []float32) {
	for i := range out {
		gv := min(g[i], o.limit)
		uv := max(-o.limit, min(u[i], o.limit))
		out[i] = gv / (1 + float32(math.Exp(float64(-o.alpha*gv)))) * (uv + 1)
	}
}
