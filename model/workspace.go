// This file implements the forward pass's scratch: activation buffers sized for the largest
// batch seen so far and kept with the cache (one sequence, never used concurrently), so decode
// steps do not allocate, plus the row-wise small ops split across the pool only when a batch
// is large enough to pay for the fan-out.
package model

import (
	"github.com/llmcloud/llmcloud/kernels"
)

// workspace holds a cache's activation buffers for up to rows batch rows.
type workspace struct {
	rows                              int
	x, xb, q, k, v, att, gate, up, cs []float32
	attn                              kernels.AttentionRunner
	norm                              normJob
}

// workspace returns c's buffers, grown to n rows if needed.
func (c *Cache) workspace(cfg *Config, n int) *workspace {
	ws := c.ws
	if ws == nil {
		ws = &workspace{}
		ws.norm.fn = ws.norm.run
		c.ws = ws
	}
	if n > ws.rows {
		ws.rows = n
		ws.x = make([]float32, n*cfg.Dim)
		ws.xb = make([]float32, n*cfg.Dim)
		ws.q = make([]float32, n*cfg.QDim())
		ws.k = make([]float32, n*cfg.KVDim())
		ws.v = make([]float32, n*cfg.KVDim())
		ws.att = make([]float32, n*cfg.QDim())
		ws.gate = make([]float32, n*cfg.FFN)
		ws.up = make([]float32, n*cfg.FFN)
		ws.cs = make([]float32, n*cfg.HeadDim)
	}
	return ws
}

// parallelMin is the element count below which a row-wise op runs on the calling goroutine:
// a pool fan-out costs about a microsecond, what these ops take for ~10^4 elements.
const parallelMin = 1 << 15

// normJob is RMSNorm over rows, prepared once so the pool call does not allocate a closure.
type normJob struct {
	out, x, w []float32
	dim       int
	eps       float32
	fn        func(lo, hi int)
}

func (j *normJob) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		kernels.RMSNorm(j.out[i*j.dim:(i+1)*j.dim], j.x[i*j.dim:(i+1)*j.dim], j.w, j.eps)
	}
}

// rmsNormRows sets out[i] = RMSNorm(x[i]) * w for n rows of dim.
func (ws *workspace) rmsNormRows(p *kernels.Pool, out, x, w []float32, n, dim int, eps float32) {
	j := &ws.norm
	j.out, j.x, j.w, j.dim, j.eps = out, x, w, dim, eps
	if n == 1 || n*dim < parallelMin {
		j.run(0, n)
	} else {
		p.For(n, 1, j.fn)
	}
	j.out, j.x, j.w = nil, nil, nil
}
