// This file holds the backward rules of the ops that move or mix rows: matmul (and the fused
// matmul_multi), embedding and gather_rows.
//
//	y = x·wᵀ            dx = matmul_dx(dy, w)          dw = matmul_dw(dy, x)
//	y_i = x·w_iᵀ        dx = Σ_i matmul_dx(dy_i, w_i)  dw_i = matmul_dw(dy_i, x)
//	y = table[ids]      dtable = embedding_grad(dy, ids, table)
//	y = x[idx]          dx = gather_rows_grad(dy, idx, x)
package graph

func init() {
	gradRules["matmul"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		x, w, dy := n.Args[0], n.Args[1], dys[0]
		out := make([]*Value, 2)
		if need[0] {
			out[0] = gb.op1("matmul_dx", nil, dy, w)
		}
		if need[1] {
			out[1] = gb.op1("matmul_dw", nil, dy, x)
		}
		return out
	}
	gradRules["matmul_multi"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		x := n.Args[0]
		out := make([]*Value, len(n.Args))
		var dxs []*Value
		for i, w := range n.Args[1:] {
			dy := dys[i]
			if dy == nil {
				continue
			}
			if need[0] {
				dxs = append(dxs, gb.op1("matmul_dx", nil, dy, w))
			}
			if need[i+1] {
				out[i+1] = gb.op1("matmul_dw", nil, dy, x)
			}
		}
		if len(dxs) > 0 {
			out[0] = gb.sum(dxs)
		}
		return out
	}
	gradRules["embedding"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		tab, ids := n.Args[0], n.Args[1]
		return []*Value{gb.op1("embedding_grad", nil, dys[0], ids, tab), nil}
	}
	gradRules["gather_rows"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		x, idx := n.Args[0], n.Args[1]
		return []*Value{gb.op1("gather_rows_grad", nil, dys[0], idx, x), nil}
	}
}
