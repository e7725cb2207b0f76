// This file registers split: a row-wise op cutting each row of x into consecutive pieces, the
// outputs of a fused projection (Phi-3's attn_qkv: q, k, v; its ffn_up: gate, up); and concat,
// its inverse and backward (a piece without a gradient contributes zeros):
//
//	(y1, .., yk) = split(x)    dx = concat(dy1, .., dyk)
package graph

func init() {
	register(&OpDef{Name: "split", MinArgs: 1, MaxArgs: 1, Attrs: []AttrSpec{{"sizes", AttrInts, true}},
		Doc: "x f32[..,S] cut along the last dimension into consecutive pieces of the given sizes (summing to S) -> one f32[..,size] per piece",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			x, sizes := a[0], at.Ints("sizes")
			if err := want(isFloat(x) && len(x.Shape) >= 1, "x must be f32 with at least 1 dimension, is %v", x); err != nil {
				return nil, err
			}
			if err := want(len(sizes) >= 1, "sizes must list at least one piece"); err != nil {
				return nil, err
			}
			var sum int64
			out := make([]Type, 0, len(sizes))
			for i, s := range sizes {
				if err := want(s > 0, "size %d of piece %d must be positive", s, i); err != nil {
					return nil, err
				}
				sum += s
				out = append(out, Type{x.DType, withLast(rowsOf(x), D(int(s)))})
			}
			last := x.Shape.Last()
			if err := want(last.N == int(sum) && last.Sym == "", "the sizes %v sum to %d, x's last dimension is %v", sizes, sum, last); err != nil {
				return nil, err
			}
			return out, nil
		}})
	register(&OpDef{Name: "concat", MinArgs: 1, MaxArgs: -1,
		Doc: "pieces f32[..,s_i] with the same leading dimensions joined along the last dimension -> f32[..,Σs_i] (split's inverse)",
		Infer: func(a []Type, _ Attrs) ([]Type, error) {
			sum := 0
			for i, t := range a {
				if err := want(isFloat(t) && len(t.Shape) >= 1 && len(t.Shape) == len(a[0].Shape) && rowsOf(t).Equal(rowsOf(a[0])),
					"piece %d %v must be f32 with the leading dimensions of piece 0 %v", i, t, a[0]); err != nil {
					return nil, err
				}
				last := t.Shape.Last()
				if err := want(last.Known(), "piece %d's last dimension %v must be known", i, last); err != nil {
					return nil, err
				}
				sum += last.N
			}
			return []Type{{a[0].DType, withLast(rowsOf(a[0]), D(sum))}}, nil
		}})
	gradRules["split"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		parts := make([]*Value, len(dys))
		for i, d := range dys {
			parts[i] = d
			if d == nil {
				parts[i] = gb.op1("zeros", nil, n.Outs[i])
			}
		}
		return []*Value{gb.op1("concat", nil, parts...)}
	}
	gradRules["concat"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		sizes := make([]int64, len(n.Args))
		for i, a := range n.Args {
			sizes[i] = int64(a.Type.Shape.Last().N)
		}
		if len(sizes) == 1 {
			return []*Value{dys[0]}
		}
		return gb.op("split", Attrs{"sizes": IntList(sizes...)}, dys[0])
	}
}
