// This file runs the matrix ops: matmul (one weight) and matmul_multi (several weights of one
// input, the input quantized once by kernels.MatMulShared), in Invariant mode through
// kernels.MatMulInvariant for a lone row so every row's sums keep the batch-size-independent
// order. These are the kernel calls the hand-written serving forward made.
package exec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// weightArg returns the bound matrix of n's argument i, or an error naming it.
func (p *Program) weightArg(n *graph.Node, i int) (*tensor.Tensor, error) {
	x := p.vals[p.ids[n.Args[i]]]
	if x.weight == nil || len(x.v.Type.Shape) != 2 {
		return nil, fmt.Errorf("argument %s: the serving executor multiplies by weight matrices only", n.Args[i])
	}
	return x.weight, nil
}

type matmulOp struct {
	x, out int
	w      *tensor.Tensor
	k      int
	names  []string // the weight's name, for the observer
}

func (p *Program) compileMatMul(n *graph.Node) (instr, error) {
	w, err := p.weightArg(n, 1)
	if err != nil {
		return nil, err
	}
	return &matmulOp{x: p.ids[n.Args[0]], out: p.ids[n.Outs[0]], w: w, k: w.Shape[1], names: []string{n.Args[1].Name}}, nil
}

func (o *matmulOp) run(p *Program) error {
	x := p.f32(o.x)
	m := len(x) / o.k
	if p.observe != nil {
		p.observe(x, m, o.k, o.names)
	}
	var err error
	switch out := p.f32(o.out); {
	case p.invariant:
		err = p.pool.MatMulInvariant(out, x, o.w, m)
	case kernels.PerTokenFaster(o.w, m): // two to eight tokens as decodes in one pass (kernels/quant_decode2.go)
		err = p.pool.MatMulDecodes(out, x, o.w, m)
	default:
		err = p.pool.MatMul(out, x, o.w, m)
	}
	if err != nil {
		return err
	}
	return p.addLoRA(o.names[0], p.f32(o.out), x, m, o.k, o.w.Shape[0])
}

type matmulMultiOp struct {
	x     int
	outs  []int
	ws    []*tensor.Tensor
	names []string // the weights' names, for the observer
	k     int
	bufs  [][]float32 // the outputs' data, reused argument of MatMulShared
}

func (p *Program) compileMatMulMulti(n *graph.Node) (instr, error) {
	o := &matmulMultiOp{x: p.ids[n.Args[0]]}
	for i := 1; i < len(n.Args); i++ {
		w, err := p.weightArg(n, i)
		if err != nil {
			return nil, err
		}
		o.ws = append(o.ws, w)
		o.names = append(o.names, n.Args[i].Name)
		o.outs = append(o.outs, p.ids[n.Outs[i-1]])
	}
	o.k = o.ws[0].Shape[1]
	o.bufs = make([][]float32, len(o.ws))
	return o, nil
}

func (o *matmulMultiOp) run(p *Program) error {
	x := p.f32(o.x)
	m := len(x) / o.k
	if p.observe != nil {
		p.observe(x, m, o.k, o.names)
	}
	if p.invariant && m == 1 {
		for i, w := range o.ws {
			if err := p.pool.MatMulInvariant(p.f32(o.outs[i]), x, w, m); err != nil {
				return err
			}
		}
	} else if !p.invariant && o.perToken(m) {
		for i, w := range o.ws {
			if err := p.pool.MatMulDecodes(p.f32(o.outs[i]), x, w, m); err != nil {
				return err
			}
		}
	} else {
		for i, id := range o.outs {
			o.bufs[i] = p.f32(id)
		}
		err := p.pool.MatMulShared(o.bufs, x, o.ws, m)
		clear(o.bufs)
		if err != nil {
			return err
		}
	}
	for i, w := range o.ws {
		if err := p.addLoRA(o.names[i], p.f32(o.outs[i]), x, m, o.k, w.Shape[0]); err != nil {
			return err
		}
	}
	return nil
}

// perToken reports whether every weight of the op runs m tokens faster as one-token decodes
// (kernels.PerTokenFaster), so that the op runs MatMulDecodes on each weight.
func (o *matmulMultiOp) perToken(m int) bool {
	for _, w := range o.ws {
		if !kernels.PerTokenFaster(w, m) {
			return false
		}
	}
	return true
}
