// This file holds the backward rules of the position-aware ops: rope and attention.
//
//	y = rope(x, pos[, freqs])   dx = rope_grad(dy, pos[, freqs])  (freqs are constants)
//	y = attention(q, k, v)      (dq, dk, dv) = attention_grad(dy, q, k, v)
//
// attention_grad recomputes the attention probabilities from q and k rather than keeping them
// (they are [heads, T, T] per sequence, larger than q, k and v together at training lengths).
package graph

import "fmt"

func init() {
	gradRules["rope"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		args := append([]*Value{dys[0]}, n.Args[1:]...)
		out := make([]*Value, len(n.Args))
		out[0] = gb.op1("rope_grad", n.Attrs, args...)
		return out
	}
	gradRules["attention"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		if len(n.Args) == 4 {
			if gb.err == nil {
				gb.err = fmt.Errorf("%s: attention with sinks has no backward", n.Name())
			}
			return make([]*Value, 4)
		}
		r := gb.op("attention_grad", n.Attrs, dys[0], n.Args[0], n.Args[1], n.Args[2])
		return []*Value{r[0], r[1], r[2]}
	}
}
