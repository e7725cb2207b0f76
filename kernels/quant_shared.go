// This file implements MatMulShared: several matmuls of one input (a transformer's q/k/v
// projections, or its FFN gate and up), with the input quantized once for all the quantized
// weights that can share it (Q8_0 and Q4_0 share blocks of 32; Q4_K and Q6_K share Q8_K).
package kernels

import (
	"fmt"

	"github.com/llmcloud/llmcloud/tensor"
)

// MatMulShared computes outs[i] = x · ws[i]ᵀ for every i: x is [m, k], ws[i] is [n_i, k] and
// outs[i] is [m, n_i]. The results are those of MatMul on each weight; the activations are
// quantized once per family of quantized weight types instead of once per weight.
func (p *Pool) MatMulShared(outs [][]float32, x []float32, ws []*tensor.Tensor, m int) error {
	if len(outs) != len(ws) {
		return fmt.Errorf("matmul: %d outputs for %d weights", len(outs), len(ws))
	}
	var q8, qk, w8 []int // indexes of weights using blocks of 32 / Q8_K / W8A8
	var k int
	var f16 []*tensor.Tensor // F16 weights run as one job of dynamic items (float_gemm_items.go)
	var f16Outs [][]float32
	for i, w := range ws {
		if !Reference && f16Usable(w, m) && (len(f16) == 0 || w.Shape[1] == f16[0].Shape[1]) {
			if err := w.Check(); err != nil {
				return fmt.Errorf("matmul: %w", err)
			}
			if n, kf := w.Shape[0], w.Shape[1]; len(x) < m*kf || len(outs[i]) < m*n {
				return fmt.Errorf("matmul: weight %s [%d %d]: x has %d values and out %d, want %d and %d for m=%d",
					w.Name, n, kf, len(x), len(outs[i]), m*kf, m*n, m)
			}
			f16, f16Outs = append(f16, w), append(f16Outs, outs[i])
			continue
		}
		if !Reference && w.Type == tensor.W8A8 && len(w.Shape) == 2 { // one int8 quantization for all (w8a8.go)
			w8 = append(w8, i)
			continue
		}
		fusedZero := m == 1 && gemvRows == 1 && zeroFused(w) && w.Zero.Perm == nil // a Q4_0Z decode row (matmul_zero_fused.go)
		if fusedZero {
			if err := w.CheckZero(); err != nil {
				return fmt.Errorf("matmul: %w", err)
			}
		}
		if !fusedZero && (Reference || !quantAsmShared(w)) {
			if err := p.MatMul(outs[i], x, w, m); err != nil {
				return err
			}
			continue
		}
		n := w.Shape[0]
		if len(q8)+len(qk) > 0 && w.Shape[1] != k {
			return fmt.Errorf("matmul: weight %s has k=%d, the other weights sharing x %d", w.Name, w.Shape[1], k)
		}
		k = w.Shape[1]
		if err := w.Check(); err != nil {
			return fmt.Errorf("matmul: %w", err)
		}
		if m < 0 || len(x) < m*k || len(outs[i]) < m*n {
			return fmt.Errorf("matmul: weight %s [%d %d]: x has %d values and out %d, want %d and %d for m=%d",
				w.Name, n, k, len(x), len(outs[i]), m*k, m*n, m)
		}
		if w.Type == tensor.Q8_0 || w.Type == tensor.Q4_0 || fusedZero {
			q8 = append(q8, i)
		} else {
			qk = append(qk, i)
		}
	}
	if len(f16) > 0 {
		matmulF16Multi(p, f16Outs, x, f16, m, f16[0].Shape[1])
	}
	if len(w8) > 0 {
		if err := matmulW8A8Shared(p, outs, x, ws, w8, m); err != nil {
			return err
		}
	}
	if m == 0 || len(q8)+len(qk) == 0 {
		return nil
	}
	if m == 1 && gemvRows == 1 {
		return p.gemvShared(outs, x, ws, q8, qk, k)
	}
	if len(q8) > 0 {
		corr := false
		for _, i := range q8 {
			corr = corr || ws[i].Type == tensor.Q4_0
		}
		a := getQ8Acts(m, k, corr)
		defer q8ActPool.Put(a)
		a.quantize(p, x, corr)
		// One pool job for all the weights' items (quant_shared_items.go).
		wd, q4s, ns, os := make([][]byte, len(q8)), make([]bool, len(q8)), make([]int, len(q8)), make([][]float32, len(q8))
		for j, i := range q8 {
			wd[j], q4s[j], ns[j], os[j] = ws[i].Data, ws[i].Type == tensor.Q4_0, ws[i].Shape[0], outs[i]
		}
		matmulQ8Multi(p, os, a, wd, q4s, ns, m, k)
	}
	if len(qk) > 0 {
		a := getQ8KActs(m, k)
		defer q8KActPool.Put(a)
		a.quantize(p, x)
		for _, i := range qk {
			matmulKActs(p, outs[i], a, ws[i].Data, ws[i].Type == tensor.Q6_K, m, ws[i].Shape[0], k)
		}
	}
	return nil
}

// gemvShared is MatMulShared for one token: the token is quantized once per family, and the
// rows of all the weights are split across the pool as one job.
func (p *Pool) gemvShared(outs [][]float32, x []float32, ws []*tensor.Tensor, q8, qk []int, k int) error {
	var a8 *q8Acts
	var ak *q8KActs
	sp := getGemvSegs()
	defer putGemvSegs(sp)
	segs := *sp
	if len(q8) > 0 {
		corr := false
		for _, i := range q8 {
			corr = corr || ws[i].Type == tensor.Q4_0
		}
		a8 = getQ8Acts(1, k, corr)
		defer q8ActPool.Put(a8)
		a8.quantize(p, x, corr)
		for _, i := range q8 {
			if ws[i].Type == tensor.Q4_0Z {
				segs = append(segs, zeroSeg(outs[i], ws[i]))
				continue
			}
			segs = append(segs, gemvSeg{out: outs[i], w: ws[i].Data, dt: ws[i].Type, n: ws[i].Shape[0], k: k})
		}
	}
	if len(qk) > 0 {
		ak = getQ8KActs(1, k)
		defer q8KActPool.Put(ak)
		ak.quantize(p, x)
		for _, i := range qk {
			segs = append(segs, gemvSeg{out: outs[i], w: ws[i].Data, dt: ws[i].Type, n: ws[i].Shape[0], k: k})
		}
	}
	*sp = segs
	gemvSegs(p, segs, a8, ak)
	return nil
}

// quantAsmShared reports whether w is a 2-D quantized weight of a type whose activation
// quantization MatMulShared shares (all of them share with the same input's k).
func quantAsmShared(w *tensor.Tensor) bool {
	if len(w.Shape) != 2 || w.Shape[0] == 0 {
		return false
	}
	switch w.Type {
	case tensor.Q8_0, tensor.Q4_0:
		return w.Shape[1]%32 == 0
	case tensor.Q4_K, tensor.Q6_K:
		return w.Shape[1]%256 == 0
	}
	return false
}
