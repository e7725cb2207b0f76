// This file registers split: a row-wise op cutting each row of x into consecutive pieces, the
// outputs of a fused projection (Phi-3's attn_qkv: q, k, v; its ffn_up: gate, up).
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
}
