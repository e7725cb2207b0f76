// This file runs the ops that read a frozen weight bound in its stored type (Param.Q: a
// quantized base under low-rank adapters, QLoRA-style): the forward matmul is the serving
// kernel (kernels.Pool.MatMul over Q8_0, Q4_K, ... with its quantized activations), the input
// gradient dx = dy·w is kernels.Pool.MatMulDX (dequantizing a tile of rows at a time), and an
// embedding dequantizes the rows it looks up. The weight never gets a gradient, so no other
// product of it is needed; any other op reading it is refused when the program is built.
package trainexec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// checkQuant checks that pr's stored tensor can stand for weight w: a frozen matrix of w's
// shape in a type the kernels read.
func checkQuant(w *graph.Value, pr Param) error {
	q := pr.Q
	if pr.G != nil || pr.W != nil {
		return fmt.Errorf("trainexec: weight %s bound in its stored type %s must be frozen (no G) and have no f32 values", w, q.Type)
	}
	if len(w.Type.Shape) != 2 || len(q.Shape) != 2 || q.Shape[0] != w.Type.Shape[0].N || q.Shape[1] != w.Type.Shape[1].N {
		return fmt.Errorf("trainexec: weight %s %v bound to a %s tensor of shape %v", w, w.Type, q.Type, q.Shape)
	}
	if err := q.Check(); err != nil {
		return fmt.Errorf("trainexec: weight %s: %w", w, err)
	}
	if _, ok := tensor.ZeroBase(q.Type); ok || q.Type == tensor.W8A8 {
		return fmt.Errorf("trainexec: weight %s: %s cannot be a frozen training weight", w, q.Type)
	}
	row := make([]float32, q.Shape[1])
	if err := tensor.DequantizeRow(q.Type, q.RowData(0), row); err != nil {
		return fmt.Errorf("trainexec: weight %s: %w", w, err)
	}
	return nil
}

// quant is the stored tensor v is bound to, or nil (f32 values, or not a weight).
func (p *Program) quant(v *graph.Value) *tensor.Tensor {
	if v.Kind != graph.KindWeight {
		return nil
	}
	return p.params[v.Name].Q
}

// compileQuant compiles n when one of its arguments is a stored-type weight (ok false: none is).
func (p *Program) compileQuant(n *graph.Node) (fn func(), ok bool, err error) {
	var q *tensor.Tensor
	at := -1
	for i, a := range n.Args {
		if t := p.quant(a); t != nil {
			q, at = t, i
		}
	}
	if q == nil {
		return nil, false, nil
	}
	a, out := n.Args, n.Outs[0]
	switch {
	case n.Op == "matmul" && at == 1:
		return func() {
			if err := p.pool.MatMul(p.buf(out), p.buf(a[0]), q, p.N); err != nil {
				panic("trainexec: " + err.Error())
			}
		}, true, nil
	case n.Op == "matmul_dx" && at == 1:
		return func() { p.matmulDX(p.buf(out), p.buf(a[0]), q, false) }, true, nil
	case n.Op == "embedding" && at == 0:
		C := q.Shape[1]
		return func() {
			ids, dst := p.ints[a[1].Name], p.buf(out)
			p.pool.For(p.N, 16, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					if err := tensor.DequantizeRow(q.Type, q.RowData(int(ids[i])), dst[i*C:(i+1)*C]); err != nil {
						panic("trainexec: " + err.Error())
					}
				}
			})
		}, true, nil
	}
	return nil, true, fmt.Errorf("op %s cannot read %s, bound in its stored type %s (only matmul, its input gradient and embedding can)", n.Op, a[at], q.Type)
}

// matmulDX is dx (+)= dy·w for a stored-type weight.
func (p *Program) matmulDX(dx, dy []float32, q *tensor.Tensor, acc bool) {
	if err := p.pool.MatMulDX(dx, dy, q, p.N, acc); err != nil {
		panic("trainexec: " + err.Error())
	}
}
