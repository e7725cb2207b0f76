// This file runs the row-wise and element-wise ops (embedding, rms_norm, add_rms_norm, add and
// mul with broadcast, silu, swiglu, softmax, scale, softcap, gather_rows) and dispatches every
// node to its compiled form. Ops that reduce along a row (norms, softmax) or whose vector
// kernels treat a row's tail specially (swiglu) run row by row, so a row's values never depend
// on its neighbours in the batch.
package exec

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// compileNode picks node n's implementation.
func (p *Program) compileNode(n *graph.Node) (instr, error) {
	id := func(i int) int { return p.ids[n.Args[i]] }
	out := p.ids[n.Outs[0]]
	if in, ok, err := p.compileTP(n); ok {
		return in, err
	}
	switch n.Op {
	case "matmul":
		return p.compileMatMul(n)
	case "matmul_multi":
		return p.compileMatMulMulti(n)
	case "rope":
		return p.compileRope(n)
	case "qkv_rope":
		return p.compileQKVRope(n)
	case "attention":
		return p.compileAttention(n)
	case "mla_attention":
		return p.compileMLA(n)
	case "moe":
		return p.compileMoE(n)
	case "embedding":
		t := p.vals[id(0)].weight
		if t == nil {
			return nil, fmt.Errorf("the table %s must be a weight", n.Args[0])
		}
		return &embeddingOp{table: t, ids: id(1), out: out}, nil
	case "rms_norm", "add_rms_norm":
		o := &normOp{x: id(0), out: out, eps: float32(n.Attrs.Float("eps", 0)), y: -1, sum: -1}
		w := n.Args[len(n.Args)-1]
		if o.w = p.vals[p.ids[w]].vec; o.w == nil {
			return nil, fmt.Errorf("the norm weight %s must be a weight", w)
		}
		if n.Op == "add_rms_norm" {
			o.y, o.sum, o.out = id(1), out, p.ids[n.Outs[1]]
		}
		o.fn = o.rows
		return o, nil
	case "add", "mul":
		return &binaryOp{a: id(0), b: id(1), out: out, mul: n.Op == "mul"}, nil
	case "silu", "softmax", "scale", "softcap":
		o := &unaryOp{op: n.Op, x: id(0), out: out, by: float32(n.Attrs.Float("by", 0)), cap: n.Attrs.Float("cap", 0)}
		if n.Op == "silu" {
			o.ones = make([]float32, p.vals[out].last)
			for i := range o.ones {
				o.ones[i] = 1
			}
		}
		return o, nil
	case "gelu":
		return &geluOp{x: id(0), u: -1, out: out}, nil
	case "geglu":
		return &geluOp{x: id(0), u: id(1), out: out}, nil
	case "swiglu_oai":
		return &swigluOAIOp{g: id(0), u: id(1), out: out, alpha: float32(n.Attrs.Float("alpha", 1.702)),
			limit: float32(n.Attrs.Float("limit", 7))}, nil
	case "swiglu":
		o := &swigluOp{g: id(0), u: id(1), out: out, ffn: p.vals[out].last}
		o.fn = o.rows
		return o, nil
	case "split":
		return p.compileSplit(n)
	case "gather_rows":
		return &gatherOp{x: id(0), idx: id(1), out: out, d: p.vals[out].last}, nil
	case "cross_entropy":
		return nil, fmt.Errorf("cross_entropy is not supported by the serving executor")
	}
	return nil, fmt.Errorf("op %s is not supported by the serving executor", n.Op)
}

type embeddingOp struct {
	table    *tensor.Tensor
	ids, out int
}

func (o *embeddingOp) run(p *Program) error {
	ids, out := p.vals[o.ids].ints, p.f32(o.out)
	rows, d := o.table.Shape[0], o.table.Shape[1]
	for i, t := range ids {
		if t < 0 || t >= rows {
			return fmt.Errorf("row %d: id %d out of range [0, %d)", i, t, rows)
		}
		if err := tensor.DequantizeRow(o.table.Type, o.table.RowData(t), out[i*d:(i+1)*d]); err != nil {
			return fmt.Errorf("%s row %d: %w", o.table.Name, t, err)
		}
	}
	return nil
}

// normOp is rms_norm, and add_rms_norm when y >= 0 (sum = x + y first, row by row in the same
// pass: an element-wise sum is the same float however the rows are split).
type normOp struct {
	x, y, sum, out int
	w              []float32
	eps            float32
	xd, yd, sd, od []float32
	dim            int
	fn             func(lo, hi int)
}

func (o *normOp) run(p *Program) error {
	o.xd, o.od, o.dim = p.f32(o.x), p.f32(o.out), p.vals[o.x].last
	if o.y >= 0 {
		o.yd, o.sd = p.f32(o.y), p.f32(o.sum)
	}
	n := len(o.xd) / o.dim
	if n == 1 || n*o.dim < parallelMin {
		o.rows(0, n)
	} else {
		p.pool.For(n, 1, o.fn)
	}
	o.xd, o.yd, o.sd, o.od = nil, nil, nil, nil
	return nil
}

func (o *normOp) rows(lo, hi int) {
	g, d := len(o.w), o.dim
	for i := lo; i < hi; i++ {
		x := o.xd[i*d : (i+1)*d]
		if o.sd != nil {
			s := o.sd[i*d : (i+1)*d]
			if !aliased(s, x) {
				copy(s, x)
			}
			kernels.Add(s, o.yd[i*d:(i+1)*d])
			x = s
		}
		out := o.od[i*d : (i+1)*d]
		for j := 0; j < d; j += g {
			kernels.RMSNorm(out[j:j+g], x[j:j+g], o.w, o.eps)
		}
	}
}

// binaryOp is add or mul; b is a's shape or broadcast over a's rows.
type binaryOp struct {
	a, b, out int
	mul       bool
}

func (o *binaryOp) run(p *Program) error {
	a, bd, out := p.f32(o.a), p.f32(o.b), p.f32(o.out)
	if len(out) == 0 {
		return nil
	}
	if len(bd) == 0 || len(a) != len(out) {
		return fmt.Errorf("operands of %d and %d values", len(a), len(bd))
	}
	if aliased(out, bd) && len(bd) == len(out) {
		// written over b (graph.InPlace allows it): b op a is the same float as a op b
		a, bd = bd, a
	} else if !aliased(out, a) {
		copy(out, a)
	}
	for i := 0; i < len(out); i += len(bd) {
		seg := out[i : i+len(bd)]
		if !o.mul {
			kernels.Add(seg, bd)
			continue
		}
		for j, v := range bd {
			seg[j] *= v
		}
	}
	return nil
}

type unaryOp struct {
	op     string
	x, out int
	by     float32
	cap    float64
	ones   []float32
}

func (o *unaryOp) run(p *Program) error {
	x, out := p.f32(o.x), p.f32(o.out)
	if !aliased(out, x) {
		copy(out, x)
	}
	d := p.vals[o.out].last
	switch o.op {
	case "silu":
		for i := 0; i < len(out); i += d {
			kernels.SwiGLU(out[i:i+d], out[i:i+d], o.ones)
		}
	case "softmax":
		for i := 0; i < len(out); i += d {
			kernels.Softmax(out[i : i+d])
		}
	case "scale":
		kernels.Scale(out, o.by)
	case "softcap":
		for i, v := range out {
			out[i] = float32(o.cap * math.Tanh(float64(v)/o.cap))
		}
	}
	return nil
}

// swigluOp is SwiGLU row by row: the vector kernel treats a row's tail differently from its
// body, so a flat split over the batch would make a row's values depend on its neighbours.
type swigluOp struct {
	g, u, out  int
	ffn        int
	gd, ud, od []float32
	fn         func(lo, hi int)
}

func (o *swigluOp) run(p *Program) error {
	o.gd, o.ud, o.od = p.f32(o.g), p.f32(o.u), p.f32(o.out)
	n := len(o.gd) / o.ffn
	if n*o.ffn < parallelMin {
		o.rows(0, n)
	} else {
		p.pool.For(n, max(1, 4096/o.ffn), o.fn)
	}
	o.gd, o.ud, o.od = nil, nil, nil
	return nil
}

func (o *swigluOp) rows(lo, hi int) {
	f := o.ffn
	for i := lo; i < hi; i++ {
		kernels.SwiGLU(o.od[i*f:(i+1)*f], o.gd[i*f:(i+1)*f], o.ud[i*f:(i+1)*f])
	}
}

type gatherOp struct {
	x, idx, out, d int
}

func (o *gatherOp) run(p *Program) error {
	x, out := p.f32(o.x), p.f32(o.out)
	for i, r := range p.vals[o.idx].ints {
		if r < 0 || (r+1)*o.d > len(x) {
			return fmt.Errorf("row %d: index %d outside the %d rows", i, r, len(x)/o.d)
		}
		copy(out[i*o.d:(i+1)*o.d], x[r*o.d:(r+1)*o.d])
	}
	return nil
}

// aliased reports whether a and b start at the same element (an op running in place).
func aliased(a, b []float32) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}
