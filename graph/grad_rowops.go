// This file holds the backward rules of the element-wise and row-wise ops and of the loss.
//
//	y = a + b          da = dy                  db = dy, summed over broadcast rows (sum_rows)
//	y = a * b          da = dy * b              db = dy * a, summed over broadcast rows
//	y = silu(x)        dx = silu_grad(dy, x)
//	y = swiglu(g, u)   dg = silu_grad(dy * u, g)   du = dy * silu(g)
//	y = softmax(x)     dx = softmax_grad(dy, y)
//	y = scale(x, c)    dx = scale(dy, c)
//	y = softcap(x, c)  dx = softcap_grad(dy, x)
//	l = cross_entropy(z, t)  dz = cross_entropy_grad(dl, z, t)
//	y = sum_rows(x)    dx = dy broadcast: add(zeros(x), dy)
package graph

func init() {
	gradRules["add"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		a, b, dy := n.Args[0], n.Args[1], dys[0]
		out := []*Value{dy, nil}
		if need[1] {
			out[1] = gb.reduceTo(dy, b)
		}
		if a == b { // x + x
			out[0] = gb.op1("scale", Attrs{"by": Float(2)}, dy)
			out[1] = nil
		}
		return out
	}
	gradRules["mul"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		a, b, dy := n.Args[0], n.Args[1], dys[0]
		out := make([]*Value, 2)
		if need[0] {
			out[0] = gb.op1("mul", nil, dy, b)
		}
		if need[1] && a != b {
			out[1] = gb.reduceTo(gb.op1("mul", nil, dy, a), b)
		}
		if a == b { // x * x
			out[0] = gb.op1("scale", Attrs{"by": Float(2)}, out[0])
		}
		return out
	}
	gradRules["silu"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("silu_grad", nil, dys[0], n.Args[0])}
	}
	gradRules["swiglu"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		g, u, dy := n.Args[0], n.Args[1], dys[0]
		out := make([]*Value, 2)
		if need[0] {
			out[0] = gb.op1("silu_grad", nil, gb.op1("mul", nil, dy, u), g)
		}
		if need[1] {
			out[1] = gb.op1("mul", nil, dy, gb.op1("silu", nil, g))
		}
		return out
	}
	gradRules["softmax"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("softmax_grad", nil, dys[0], n.Outs[0])}
	}
	gradRules["scale"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("scale", n.Attrs, dys[0])}
	}
	gradRules["softcap"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("softcap_grad", n.Attrs, dys[0], n.Args[0])}
	}
	gradRules["cross_entropy"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("cross_entropy_grad", nil, dys[0], n.Args[0], n.Args[1]), nil}
	}
	gradRules["sum_rows"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("add", nil, gb.op1("zeros", nil, n.Args[0]), dys[0])}
	}
}
