// This file holds the backward rules of the norms: rms_norm and the fused add_rms_norm.
//
//	y = rms_norm(x, w)            (dx, dw) = rms_norm_grad(dy, x, w)
//	(s, h) = add_rms_norm(x,y,w)  (ds', dw) = rms_norm_grad(dh, s, w); dx = dy = ds + ds'
package graph

func init() {
	gradRules["rms_norm"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		r := gb.op("rms_norm_grad", n.Attrs, dys[0], n.Args[0], n.Args[1])
		return []*Value{r[0], r[1]}
	}
	gradRules["add_rms_norm"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		s, w := n.Outs[0], n.Args[2]
		ds, dw := dys[0], (*Value)(nil)
		if dys[1] != nil {
			r := gb.op("rms_norm_grad", n.Attrs, dys[1], s, w)
			dw = r[1]
			if ds == nil {
				ds = r[0]
			} else {
				ds = gb.op1("add", nil, ds, r[0])
			}
		}
		return []*Value{ds, ds, dw}
	}
}
