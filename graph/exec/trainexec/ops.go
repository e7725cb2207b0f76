// This file compiles one node into a closure over the program's buffers, calling the layers of
// kernels/train_rows.go and kernels/train_attention.go as train/nn's hand-written layers did. Sizes are read when
// the closure runs (p.N, p.B, p.T of the current batch).
package trainexec

import (
	"fmt"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
)

// compile returns n's instruction (nil: nothing to run, e.g. an alias).
func (p *Program) compile(n *graph.Node, f *fusion) (func(), error) {
	if sw, ok := f.swBwd[n]; ok {
		return p.swigluGrad(sw), nil
	}
	if ls, ok := f.dxSum[n]; ok {
		return p.matmulDxSum(n.Outs[0], ls), nil
	}
	if fn, ok, err := p.compileQuant(n); ok {
		return fn, err
	}
	if gv, ok := f.swFwd[n]; ok {
		out, g, u := n.Outs[0], gv[0], gv[1]
		return func() {
			F := p.inner[out]
			kernels.TrainSwiGLU(p.pool, p.buf(out), p.buf(g), p.buf(u), p.N, F)
		}, nil
	}
	a, out := n.Args, (*graph.Value)(nil)
	if len(n.Outs) > 0 {
		out = n.Outs[0]
	}
	sink := f.sink[out]
	switch n.Op {
	case "embedding":
		return func() {
			kernels.TrainEmbedding(p.buf(out), p.buf(a[0]), p.ints[a[1].Name], p.N, p.inner[out])
		}, nil
	case "rms_norm":
		C := a[1].Type.Shape.Last().N
		eps := float32(n.Attrs.Float("eps", 0))
		p.keepSide(n, p.maxB*p.maxT*p.inner[out]/C)
		return func() {
			rows := p.rows(out) * p.inner[out] / C
			kernels.TrainRMSNorm(p.pool, p.buf(out), p.side[n], p.buf(a[0]), p.buf(a[1]), rows, C, eps)
		}, nil
	case "matmul":
		return func() {
			OC, C := a[1].Type.Shape[0].N, a[1].Type.Shape[1].N
			kernels.TrainLinear(p.pool, p.buf(out), p.buf(a[0]), p.buf(a[1]), p.N, C, OC)
		}, nil
	case "rope":
		return p.rope(n, f, 1)
	case "rope_grad":
		return p.rope(n, f, -1)
	case "attention":
		return p.attention(n)
	case "attention_grad":
		return p.attentionGrad(n)
	case "add":
		if !a[0].Type.Equal(a[1].Type) {
			return p.addBias(n, f)
		}
		return func() { kernels.TrainResidual(p.cur(out), p.cur(a[0]), p.cur(a[1])) }, nil
	case "mul":
		if !a[0].Type.Equal(a[1].Type) {
			return nil, fmt.Errorf("broadcast mul is not supported in training")
		}
		return func() {
			o, x, y := p.cur(out), p.cur(a[0]), p.cur(a[1])
			for i := range o {
				o[i] = x[i] * y[i]
			}
		}, nil
	case "gather_rows":
		// Training asks for every row's logits: the gathered rows are the rows.
		p.alias[out] = a[0]
		return nil, nil
	case "gather_rows_grad":
		p.alias[out] = a[0]
		return nil, nil
	case "cross_entropy":
		return p.crossEntropy(n), nil
	case "cross_entropy_grad":
		return p.crossEntropyGrad(n, f)
	case "constant":
		v := float32(n.Attrs.Float("value", 0))
		return func() { p.buf(out)[0] = v }, nil
	case "dropout":
		return p.dropout(n), nil
	case "zeros":
		return func() { clear(p.cur(out)) }, nil
	case "matmul_dx":
		return func() {
			OC, C := a[1].Type.Shape[0].N, a[1].Type.Shape[1].N
			p.pool.Gemm(p.N, C, OC, kernels.Mat{Data: p.buf(a[0]), Stride: OC}, kernels.Mat{Data: p.buf(a[1]), Stride: C}, p.buf(out), C, false)
		}, nil
	case "matmul_dw":
		return func() {
			OC, C := out.Type.Shape[0].N, out.Type.Shape[1].N
			dst := sink
			if dst == nil {
				dst = p.cur(out)
				clear(dst)
			}
			p.pool.Gemm(OC, C, p.N, kernels.Mat{Data: p.buf(a[0]), Stride: OC, T: true}, kernels.Mat{Data: p.buf(a[1]), Stride: C}, dst, C, true)
		}, nil
	case "embedding_grad":
		return func() {
			dst := sink
			if dst == nil {
				dst = p.cur(out)
				clear(dst)
			}
			kernels.TrainEmbeddingGrad(dst, p.buf(a[0]), p.ints[a[1].Name], p.N, p.inner[a[0]])
		}, nil
	case "rms_norm_grad":
		return p.rmsNormGrad(n, f)
	case "sum_rows":
		return p.sumRows(n, f), nil
	case "moe":
		return p.moe(n)
	case "moe_grad":
		return p.moeGrad(n, f)
	case "moe_aux":
		return p.moeAux(n)
	case "moe_aux_grad":
		return p.moeAuxGrad(n, f)
	}
	if fn, ok, err := p.compileFamily(n); ok {
		return fn, err
	}
	if fn, ok, err := p.compileComm(n, f); ok {
		return fn, err
	}
	return nil, fmt.Errorf("op %s is not supported by the training executor", n.Op)
}

// forwardOf finds the forward node of op with the given leading arguments that backward node
// bn differentiates: the last before bn (a recomputed copy, when there is one).
func (p *Program) forwardOf(bn *graph.Node, op string, args ...*graph.Value) *graph.Node {
	for i := p.at[bn] - 1; i >= 0; i-- {
		n := p.g.Nodes[i]
		if n.Op != op || len(n.Args) < len(args) {
			continue
		}
		ok := true
		for i, a := range args {
			ok = ok && n.Args[i] == a
		}
		if ok {
			return n
		}
	}
	return nil
}

func (p *Program) rmsNormGrad(n *graph.Node, f *fusion) (func(), error) {
	dy, x, w := n.Args[0], n.Args[1], n.Args[2]
	fw := p.forwardOf(n, "rms_norm", x, w)
	if fw == nil || !p.readSide(fw) {
		return nil, fmt.Errorf("no forward rms_norm of %s, %s", x, w)
	}
	dx, dw := n.Outs[0], n.Outs[1]
	sink := f.sink[dw]
	C := w.Type.Shape.Last().N
	na, fused := f.normAdd[n]
	inPlace := false
	if fused {
		dx = na.add.Outs[0]
		inPlace = f.uses[na.other] == 1 && na.other.Kind == graph.KindResult
		if inPlace {
			p.alias[dx] = na.other
		}
	}
	return func() {
		rows := p.rows(x) * p.inner[x] / C
		d := p.cur(dx)
		switch {
		case !fused:
			clear(d)
		case !inPlace:
			copy(d, p.cur(na.other))
		}
		dst := sink
		if dst == nil {
			dst = p.cur(dw)
			clear(dst)
		}
		kernels.TrainRMSNormGrad(p.pool, d, dst, p.buf(dy), p.buf(x), p.buf(w), p.side[fw], rows, C)
	}, nil
}

// rope rotates its argument in place when this node is its only user, else a copy.
func (p *Program) rope(n *graph.Node, f *fusion, sign int) (func(), error) {
	neox := n.Attrs.Int("neox", 0) != 0
	hd, heads := int(n.Attrs.Int("head_dim", 0)), int(n.Attrs.Int("heads", 0))
	var factors []float32
	if len(n.Args) == 3 {
		factors = p.buf(n.Args[2])
	}
	r, err := kernels.NewRope(hd, n.Attrs.Float("theta", 0), false, factors)
	if err != nil {
		return nil, err
	}
	r.Mscale = float32(n.Attrs.Float("mscale", 1)) // rope_grad: the transpose keeps the magnitude
	r.FreqScale = float32(n.Attrs.Float("freq_scale", 1))
	if _, ok := n.Attrs["yarn_factor"]; ok {
		if err := r.SetYarn(kernels.Yarn{Factor: n.Attrs.Float("yarn_factor", 1), OrigCtx: int(n.Attrs.Int("yarn_orig_ctx", 0)),
			BetaFast: n.Attrs.Float("yarn_beta_fast", 32), BetaSlow: n.Attrs.Float("yarn_beta_slow", 1)}); err != nil {
			return nil, err
		}
	}
	cs := make([]float32, p.maxT*hd)
	for t := 0; t < p.maxT; t++ {
		r.Table(cs[t*hd:(t+1)*hd], t)
	}
	x, out := n.Args[0], n.Outs[0]
	inPlace := f.uses[x] == 1 && x.Kind == graph.KindResult
	if inPlace {
		p.alias[out] = x
	}
	return func() {
		if !inPlace {
			copy(p.cur(out), p.cur(x))
		}
		switch {
		case neox && sign > 0:
			kernels.TrainRopeNeoX(p.pool, p.buf(out), cs, p.N, p.T, heads, hd)
		case neox:
			kernels.TrainRopeNeoXGrad(p.pool, p.buf(out), cs, p.N, p.T, heads, hd)
		case sign > 0:
			kernels.TrainRope(p.pool, p.buf(out), cs, p.N, p.T, heads, hd)
		default:
			kernels.TrainRopeGrad(p.pool, p.buf(out), cs, p.N, p.T, heads, hd)
		}
	}, nil
}

func attnAttrs(n *graph.Node) (kernels.AttnShape, error) {
	return kernels.AttnShape{H: int(n.Attrs.Int("heads", 0)), KVH: int(n.Attrs.Int("kv_heads", 0)), HD: int(n.Attrs.Int("head_dim", 0))}, nil
}

func (p *Program) attention(n *graph.Node) (func(), error) {
	s, err := attnAttrs(n)
	if err != nil {
		return nil, err
	}
	if o := attnOpts(n); !o.Plain() {
		return p.attentionWindow(n, s, o)
	}
	p.keepSide(n, p.maxB*s.H*p.maxT*p.maxT)
	q, k, v, out := n.Args[0], n.Args[1], n.Args[2], n.Outs[0]
	return func() {
		s.B, s.T = p.B, p.T
		if st := p.docStarts; st != nil { // packed documents (docmask.go)
			kernels.TrainAttentionWindow(p.pool, p.buf(out), p.side[n], p.buf(q), p.buf(k), p.buf(v), s, kernels.TrainAttnOpts{Starts: st})
			return
		}
		kernels.TrainAttention(p.pool, p.buf(out), p.side[n], p.buf(q), p.buf(k), p.buf(v), s)
	}, nil
}

func (p *Program) attentionGrad(n *graph.Node) (func(), error) {
	s, err := attnAttrs(n)
	if err != nil {
		return nil, err
	}
	dy, q, k, v := n.Args[0], n.Args[1], n.Args[2], n.Args[3]
	fw := p.forwardOf(n, "attention", q, k, v)
	if fw == nil || !p.readSide(fw) {
		return nil, fmt.Errorf("no forward attention of %s, %s, %s", q, k, v)
	}
	scratch := make([]float32, p.maxB*s.KVH*p.maxT*p.maxT)
	dq, dk, dv := n.Outs[0], n.Outs[1], n.Outs[2]
	if o := attnOpts(n); !o.Plain() {
		return func() {
			s.B, s.T = p.B, p.T
			a, b, c := p.cur(dq), p.cur(dk), p.cur(dv)
			clear(a)
			clear(b)
			clear(c)
			o.Starts = p.docStarts
			kernels.TrainAttentionWindowGrad(p.pool, a, b, c, p.buf(dy), p.side[fw], p.buf(q), p.buf(k), p.buf(v), scratch, s, o)
		}, nil
	}
	return func() {
		s.B, s.T = p.B, p.T
		a, b, c := p.cur(dq), p.cur(dk), p.cur(dv)
		clear(a)
		clear(b)
		clear(c)
		if st := p.docStarts; st != nil {
			kernels.TrainAttentionWindowGrad(p.pool, a, b, c, p.buf(dy), p.side[fw], p.buf(q), p.buf(k), p.buf(v), scratch, s, kernels.TrainAttnOpts{Starts: st})
			return
		}
		kernels.TrainAttentionGrad(p.pool, a, b, c, p.buf(dy), p.side[fw], p.buf(q), p.buf(k), p.buf(v), scratch, s)
	}, nil
}

func (p *Program) crossEntropy(n *graph.Node) func() {
	z := n.Args[0]
	V := p.inner[z]
	probs := make([]float32, p.maxB*p.maxT*V)
	losses := make([]float32, p.maxB*p.maxT)
	p.side[n] = probs
	return func() {
		if !p.hasTargets {
			return
		}
		p.loss = kernels.TrainCrossEntropy(p.pool, losses, probs, p.buf(z), p.ints[n.Args[1].Name], p.N, V)
		p.buf(n.Outs[0])[0] = p.loss
	}
}

// crossEntropyGrad turns the forward's probabilities into dlogits in place, as train/nn's layers did.
func (p *Program) crossEntropyGrad(n *graph.Node, f *fusion) (func(), error) {
	dl, z, t := n.Args[0], n.Args[1], n.Args[2]
	fw := p.forwardOf(n, "cross_entropy", z, t)
	if fw == nil {
		return nil, fmt.Errorf("no forward cross_entropy of %s", z)
	}
	probs := p.side[fw]
	p.bufs[n.Outs[0]] = probs
	V := p.inner[z]
	return func() {
		tg := p.ints[t.Name]
		d := p.scale * p.buf(dl)[0] / float32(max(kernels.CountTargets(tg[:p.N]), 1))
		if p.soft != nil {
			kernels.TrainSoftCrossEntropyGrad(p.pool, probs, p.soft, tg, p.N, V, d)
			return
		}
		kernels.TrainCrossEntropyGrad(p.pool, probs, tg, p.N, V, d)
	}, nil
}

// matmulDxSum is Σ matmul_dx(dy_i, w_i) as one chain of Gemms, the first setting out.
func (p *Program) matmulDxSum(out *graph.Value, ls []*graph.Node) func() {
	return func() {
		for i, l := range ls {
			dy, w := l.Args[0], l.Args[1]
			if q := p.quant(w); q != nil {
				p.matmulDX(p.buf(out), p.buf(dy), q, i > 0)
				continue
			}
			OC, C := w.Type.Shape[0].N, w.Type.Shape[1].N
			p.pool.Gemm(p.N, C, OC, kernels.Mat{Data: p.buf(dy), Stride: OC}, kernels.Mat{Data: p.buf(w), Stride: C}, p.buf(out), C, i > 0)
		}
	}
}

func (p *Program) swigluGrad(sw swigluGrad) func() {
	return func() {
		dg, du := p.cur(sw.dg), p.cur(sw.du)
		clear(dg)
		clear(du)
		kernels.TrainSwiGLUGrad(p.pool, dg, du, p.buf(sw.dy), p.buf(sw.g), p.buf(sw.u), len(dg))
	}
}
