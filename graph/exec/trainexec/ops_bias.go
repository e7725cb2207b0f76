// This file compiles the broadcast add of a bias vector over rows (Qwen2's q/k/v biases) and
// its gradient, sum_rows, with the kernels of kernels/train_qwen.go. A bias gradient (the
// sum over rows) adds straight into the trainer's G when fuse.go finds it is the weight's
// only contribution.
package trainexec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// addBias compiles add(x, b) with b x's trailing dimensions, in x's buffer when this node is
// x's only user.
func (p *Program) addBias(n *graph.Node, f *fusion) (func(), error) {
	x, b, out := n.Args[0], n.Args[1], n.Outs[0]
	if p.sym[b] || !out.Type.Equal(x.Type) {
		return nil, fmt.Errorf("broadcast add of %v to %v: only a fixed vector added to every row is supported in training", b.Type, x.Type)
	}
	C := p.inner[b]
	if C == 0 || p.inner[x]%C != 0 {
		return nil, fmt.Errorf("broadcast add of %v to %v", b.Type, x.Type)
	}
	inPlace := f.uses[x] == 1 && x.Kind == graph.KindResult
	if inPlace {
		p.alias[out] = x
	}
	return func() {
		rows := p.rows(x) * p.inner[x] / C
		kernels.TrainAddBias(p.pool, p.cur(out), p.cur(x), p.buf(b), rows, C)
	}, nil
}

// sumRows compiles sum_rows(x): x summed over its rows (and leading dimensions) into the
// kept trailing ones, added into the weight's G when it sinks there.
func (p *Program) sumRows(n *graph.Node, f *fusion) func() {
	x, out := n.Args[0], n.Outs[0]
	sink := f.sink[out]
	return func() {
		C := p.inner[out]
		dst := sink
		if dst == nil {
			dst = p.cur(out)
			clear(dst)
		}
		kernels.TrainSumRows(p.pool, dst, p.buf(x), p.rows(x)*p.inner[x]/C, C)
	}
}
