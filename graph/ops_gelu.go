// This file registers the GELU ops of Gemma's feed-forward (GeGLU): gelu, the tanh
// approximation 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) that Gemma's
// hidden_activation "gelu_pytorch_tanh" names; geglu(g, u) = gelu(g)·u, the gated product in
// one pass over the rows (what a builder writes: there is no fusion pass for it); and
// gelu_grad, their backward:
//
//	y = gelu(x)        dx = gelu_grad(dy, x)
//	y = geglu(g, u)    dg = gelu_grad(dy * u, g)   du = dy * gelu(g)
package graph

func init() {
	register(&OpDef{Name: "gelu", MinArgs: 1, MaxArgs: 1,
		Doc: "element-wise GELU, tanh approximation", Infer: unaryType})
	register(&OpDef{Name: "geglu", MinArgs: 2, MaxArgs: 2,
		Doc: "gelu(gate) * up (GELU tanh approximation)",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			if err := want(isFloat(a[0]) && a[0].Equal(a[1]), "gate %v and up %v must be equal f32 types", a[0], a[1]); err != nil {
				return nil, err
			}
			return []Type{a[0]}, nil
		}})
	register(&OpDef{Name: "gelu_grad", MinArgs: 2, MaxArgs: 2,
		Doc: "gradient of gelu: dy * gelu'(x), args (dy, x)", Infer: sameTypes})

	inPlace["gelu"] = [][2]int{{0, 0}}
	inPlace["geglu"] = [][2]int{{0, 0}, {0, 1}}
	perElement["gelu"], perElement["geglu"] = 8, 9

	gradRules["gelu"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("gelu_grad", nil, dys[0], n.Args[0])}
	}
	gradRules["geglu"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		g, u, dy := n.Args[0], n.Args[1], dys[0]
		out := make([]*Value, 2)
		if need[0] {
			out[0] = gb.op1("gelu_grad", nil, gb.op1("mul", nil, dy, u), g)
		}
		if need[1] {
			out[1] = gb.op1("mul", nil, dy, gb.op1("gelu", nil, g))
		}
		return out
	}
}
