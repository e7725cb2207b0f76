// This file implements MatMulEach: several one-token matmuls, each weight with its own input
// (a mixture of experts' down matrices, each multiplying its expert's hidden row), as one pool
// job over all their rows instead of a job per weight.
package kernels

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// MatMulEach computes outs[i] = xs[i] · ws[i]ᵀ for one token: ws[i] is [n_i, k_i], xs[i] has
// k_i values and outs[i] n_i. Each result is MatMul's on one row, except that when every
// weight is a quantized type of the one-token kernels (Q8_0, Q4_0, Q4_K, Q6_K) each input is
// quantized on its own and the rows of all the weights are split across the pool as one job
// (the row kernels of gemvSegs, not the four-stream ones, which read one token).
func (p *Pool) MatMulEach(outs, xs [][]float32, ws []*tensor.Tensor) error {
	if len(outs) != len(ws) || len(xs) != len(ws) {
		return fmt.Errorf("matmul: %d outputs and %d inputs for %d weights", len(outs), len(xs), len(ws))
	}
	fast := !Reference && gemvRows == 1
	for i, w := range ws {
		if !quantAsmShared(w) {
			fast = false
			continue
		}
		if err := w.Check(); err != nil {
			return fmt.Errorf("matmul: %w", err)
		}
		if n, k := w.Shape[0], w.Shape[1]; len(xs[i]) < k || len(outs[i]) < n {
			return fmt.Errorf("matmul: weight %s [%d %d]: x has %d values and out %d, want %d and %d for m=1",
				w.Name, n, k, len(xs[i]), len(outs[i]), k, n)
		}
	}
	if !fast {
		for i, w := range ws {
			if err := p.MatMul(outs[i], xs[i], w, 1); err != nil {
				return err
			}
		}
		return nil
	}
	sp := getGemvSegs()
	for i, w := range ws {
		k := w.Shape[1]
		s := gemvSeg{out: outs[i], w: w.Data, dt: w.Type, n: w.Shape[0], k: k}
		if q4 := w.Type == tensor.Q4_0; q4 || w.Type == tensor.Q8_0 {
			s.a8 = getQ8Acts(1, k, q4)
			s.a8.quantize(p, xs[i], q4)
		} else {
			s.ak = getQ8KActs(1, k)
			s.ak.quantize(p, xs[i])
		}
		*sp = append(*sp, s)
	}
	gemvSegs(p, *sp, nil, nil)
	for _, s := range *sp {
		if s.a8 != nil {
			q8ActPool.Put(s.a8)
		} else {
			q8KActPool.Put(s.ak)
		}
	}
	putGemvSegs(sp)
	return nil
}
