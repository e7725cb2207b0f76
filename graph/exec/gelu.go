// This file runs gelu and geglu (kernels.GeGLU), element by element, split over the pool for
// large batches.
package exec

import "github.com/llmcloud/llmcloud/kernels"

// geluOp is gelu(x) (u < 0) or geglu(x, u).
type geluOp struct {
	x, u, out int
}

func (o *geluOp) run(p *Program) error {
	x, out := p.f32(o.x), p.f32(o.out)
	var u []float32
	if o.u >= 0 {
		u = p.f32(o.u)
	}
	if len(out) < parallelMin {
		kernels.GeGLU(out, x, u)
		return nil
	}
	p.pool.For(len(out), 4096, func(lo, hi int) {
		var uc []float32
		if u != nil {
			uc = u[lo:hi]
		}
		kernels.GeGLU(out[lo:hi], x[lo:hi], uc)
	})
	return nil
}
