// This file runs split: each row of x copied out in consecutive pieces (the outputs of a fused
// projection, Phi-3's q/k/v and gate/up), one copy per piece and row.
package exec

import "github.com/llmcloud/llmcloud/graph"

type splitOp struct {
	x     int
	outs  []int
	sizes []int
}

func (p *Program) compileSplit(n *graph.Node) (instr, error) {
	o := &splitOp{x: p.ids[n.Args[0]]}
	for i, s := range n.Attrs.Ints("sizes") {
		o.outs = append(o.outs, p.ids[n.Outs[i]])
		o.sizes = append(o.sizes, int(s))
	}
	return o, nil
}

func (o *splitOp) run(p *Program) error {
	x := p.f32(o.x)
	S := p.vals[o.x].last
	rows := len(x) / S
	off := 0
	for i, id := range o.outs {
		out, s := p.f32(id), o.sizes[i]
		for r := 0; r < rows; r++ {
			copy(out[r*s:(r+1)*s], x[r*S+off:r*S+off+s])
		}
		off += s
	}
	return nil
}
