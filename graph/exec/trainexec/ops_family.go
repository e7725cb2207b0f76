// This file compiles the ops the families beyond Llama and Qwen add to training (Gemma's
// embedding scale, soft-caps and GeGLU; Phi-3's fused projections cut by split), and the
// attention with a window, soft-cap or query scalar (kernels.TrainAttentionWindow). The
// element-wise ops compute as the serving executor does (graph/exec), so a trained model's
// logits equal the served ones.
package trainexec

import (
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// elemChunk is the smallest share of an element-wise op a pool worker takes.
const elemChunk = 4096

// compileFamily returns n's instruction when n is one of this file's ops (ok true).
func (p *Program) compileFamily(n *graph.Node) (fn func(), ok bool, err error) {
	a := n.Args
	switch n.Op {
	case "scale":
		by := float32(n.Attrs.Float("by", 0))
		out := n.Outs[0]
		return func() {
			o := p.cur(out)
			copy(o, p.cur(a[0]))
			kernels.Scale(o, by)
		}, true, nil
	case "softcap":
		c := n.Attrs.Float("cap", 0)
		return p.elementwise(n, func(o, x, _ []float32) {
			for i, v := range x {
				o[i] = float32(c * math.Tanh(float64(v)/c))
			}
		}), true, nil
	case "softcap_grad":
		c := n.Attrs.Float("cap", 0)
		return p.elementwise(n, func(o, dy, x []float32) {
			for i, v := range x {
				th := math.Tanh(float64(v) / c)
				o[i] = float32(float64(dy[i]) * (1 - th*th))
			}
		}), true, nil
	case "gelu":
		return p.elementwise(n, func(o, x, _ []float32) { kernels.GeGLU(o, x, nil) }), true, nil
	case "geglu":
		return p.elementwise(n, func(o, g, u []float32) { kernels.GeGLU(o, g, u) }), true, nil
	case "gelu_grad":
		return p.elementwise(n, func(o, dy, x []float32) { kernels.GeluGrad(o, dy, x) }), true, nil
	case "split":
		return p.split(n), true, nil
	case "concat":
		return p.concat(n), true, nil
	}
	return nil, false, nil
}

// elementwise runs fn over the current batch's elements of n's result and its one or two
// arguments (the second nil when n has one), split over the pool.
func (p *Program) elementwise(n *graph.Node, fn func(o, x, y []float32)) func() {
	out, x := n.Outs[0], n.Args[0]
	var y *graph.Value
	if len(n.Args) > 1 {
		y = n.Args[1]
	}
	return func() {
		o, xv := p.cur(out), p.cur(x)
		var yv []float32
		if y != nil {
			yv = p.cur(y)
		}
		p.pool.For(len(o), elemChunk, func(lo, hi int) {
			var yc []float32
			if yv != nil {
				yc = yv[lo:hi]
			}
			fn(o[lo:hi], xv[lo:hi], yc)
		})
	}
}

// split copies each row's consecutive pieces out.
func (p *Program) split(n *graph.Node) func() {
	x := n.Args[0]
	return func() {
		S, xv, off := x.Type.Shape.Last().N, p.cur(x), 0
		rows := len(xv) / S
		for _, o := range n.Outs {
			s, ov := o.Type.Shape.Last().N, p.cur(o)
			for r := 0; r < rows; r++ {
				copy(ov[r*s:(r+1)*s], xv[r*S+off:r*S+off+s])
			}
			off += s
		}
	}
}

// concat joins the pieces' rows (split's backward).
func (p *Program) concat(n *graph.Node) func() {
	out := n.Outs[0]
	return func() {
		S := out.Type.Shape.Last().N
		ov := p.cur(out)
		rows, off := len(ov)/S, 0
		for _, a := range n.Args {
			s, av := a.Type.Shape.Last().N, p.cur(a)
			for r := 0; r < rows; r++ {
				copy(ov[r*S+off:r*S+off+s], av[r*s:(r+1)*s])
			}
			off += s
		}
	}
}

// attnOpts are attention's window, soft-cap and query scalar.
func attnOpts(n *graph.Node) kernels.TrainAttnOpts {
	return kernels.TrainAttnOpts{Window: int(n.Attrs.Int("window", 0)), Softcap: float32(n.Attrs.Float("softcap", 0)),
		Scale: float32(n.Attrs.Float("scale", 0))}
}

// attentionWindow is attention with options (kernels.TrainAttentionWindow).
func (p *Program) attentionWindow(n *graph.Node, s kernels.AttnShape, o kernels.TrainAttnOpts) (func(), error) {
	p.keepSide(n, o.SideSize(p.maxB, s.H, p.maxT))
	q, k, v, out := n.Args[0], n.Args[1], n.Args[2], n.Outs[0]
	return func() {
		s.B, s.T = p.B, p.T
		o.Starts = p.docStarts
		kernels.TrainAttentionWindow(p.pool, p.buf(out), p.side[n], p.buf(q), p.buf(k), p.buf(v), s, o)
	}, nil
}
