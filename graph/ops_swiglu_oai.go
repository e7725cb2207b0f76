// This file registers swiglu_oai, gpt-oss's gated activation: with g' = min(g, limit) and
// u' = clamp(u, -limit, limit),
//
//	swiglu_oai(g, u) = g'·sigmoid(alpha·g') · (u' + 1)
//
// (transformers' GptOssExperts: alpha 1.702, limit 7). Serving only: no backward.
package graph

func init() {
	register(&OpDef{Name: "swiglu_oai", MinArgs: 2, MaxArgs: 2,
		Attrs: []AttrSpec{{"alpha", AttrFloat, false}, {"limit", AttrFloat, false}},
		Doc:   "gpt-oss's gated activation: g' = min(g, limit), u' = clamp(u, ±limit); g'·sigmoid(alpha·g')·(u'+1) (alpha 1.702, limit 7 by default)",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			if err := want(isFloat(a[0]) && a[0].Equal(a[1]), "gate %v and up %v must be equal f32 types", a[0], a[1]); err != nil {
				return nil, err
			}
			al, l := at.Float("alpha", 1.702), at.Float("limit", 7)
			if err := want(al > 0 && l > 0 && al < 1e6 && l < 1e30, "alpha %v, limit %v: want positive", al, l); err != nil {
				return nil, err
			}
			return []Type{a[0]}, nil
		}})
	inPlace["swiglu_oai"] = [][2]int{{0, 0}, {0, 1}}
	perElement["swiglu_oai"] = 10
}
