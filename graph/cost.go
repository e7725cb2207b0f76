// This file is the cost model of the ops: for a node with its symbols bound, the floating-point
// operations it does and the bytes it moves (weights read, activations read and written, KV
// cache rows read), from which a profiler derives the GFLOP/s and GB/s an op achieved.
//
// Rules: a matmul x[m,K] by w[N,K] does 2·m·N·K FLOPs and reads w at its stored size (a Q4_0
// matrix reads 18 bytes per 32 weights), x, and writes its result. Attention does, per row
// with c positions in its context (window-limited), 4·heads·head_dim·c FLOPs for the scores
// and the weighted sum plus 5·heads·c for the softmax, and reads c K rows and c V rows of
// kv_heads·head_dim f32 (each row reads its own context: rows of one sequence reading the
// same cache rows count them once each). Row ops count a few FLOPs per element (add, mul,
// scale 1; rope 3; rms_norm 4; silu, softcap, softmax 5; swiglu 6) and read their arguments
// and write their results once. Embedding and gather_rows read only the rows they pick.
package graph

import (
	"fmt"
)

// Cost is what one execution of a node does.
type Cost struct {
	FLOPs int64
	Bytes int64 // read and written
}

// CostEnv binds what a node's cost depends on beyond its types.
type CostEnv struct {
	Sym map[string]int // the symbols' sizes ("n", "s")
	// Context is, for each row of the batch, the number of positions its attention reads
	// (its position + 1 in a sequence that starts at 0). Nil: row i reads i+1 (one sequence).
	Context []int
}

// NodeCost returns n's cost with env; an op without a cost rule or an unbound symbol is an
// error naming the node.
func NodeCost(n *Node, env CostEnv) (Cost, error) {
	c, err := nodeCost(n, env)
	if err != nil {
		return Cost{}, &NodeError{Node: n.Name(), Op: n.Op, Err: err}
	}
	return c, nil
}

// GraphCost is the sum of the costs of g's nodes.
func GraphCost(g *Graph, env CostEnv) (Cost, error) {
	var t Cost
	for _, n := range g.Nodes {
		c, err := NodeCost(n, env)
		if err != nil {
			return Cost{}, err
		}
		t.FLOPs += c.FLOPs
		t.Bytes += c.Bytes
	}
	return t, nil
}

// perElement is the FLOPs per result element of the row ops.
var perElement = map[string]int64{
	"add": 1, "mul": 1, "scale": 1, "rope": 3, "rms_norm": 4, "silu": 5, "softcap": 5,
	"softmax": 5, "swiglu": 6, "add_rms_norm": 5, "sum_rows": 1, "zeros": 0, "constant": 0,
	"cross_entropy": 5,
}

func nodeCost(n *Node, env CostEnv) (Cost, error) {
	bytesOf := func(v *Value) (int64, error) {
		b, ok := v.Type.Bytes(env.Sym)
		if !ok {
			return 0, fmt.Errorf("the size of %s %v is not bound", v, v.Type)
		}
		return b, nil
	}
	elems := func(v *Value) (int64, error) {
		e, ok := v.Type.Shape.Elems(env.Sym)
		if !ok {
			return 0, fmt.Errorf("the shape of %s %v is not bound", v, v.Type)
		}
		return int64(e), nil
	}
	// io is every argument read once and every result written once.
	io := func() (int64, error) {
		var t int64
		for _, vs := range [][]*Value{n.Args, n.Outs} {
			for _, v := range vs {
				b, err := bytesOf(v)
				if err != nil {
					return 0, err
				}
				t += b
			}
		}
		return t, nil
	}
	switch n.Op {
	case "matmul", "matmul_multi":
		b, err := io()
		if err != nil {
			return Cost{}, err
		}
		var f int64
		for _, o := range n.Outs { // x[m,K] w[N,K] -> [m,N]: 2·m·N·K
			e, err := elems(o)
			if err != nil {
				return Cost{}, err
			}
			f += 2 * e * int64(n.Args[0].Type.Shape.Last().N)
		}
		return Cost{FLOPs: f, Bytes: b}, nil
	case "embedding", "gather_rows":
		// Reads the picked rows of the table (at its stored size) and the indices, writes the rows.
		out, err := bytesOf(n.Outs[0])
		if err != nil {
			return Cost{}, err
		}
		idx, err := bytesOf(n.Args[1])
		if err != nil {
			return Cost{}, err
		}
		rows, err := elems(n.Args[1])
		if err != nil {
			return Cost{}, err
		}
		t := n.Args[0].Type
		row, ok := Type{t.DType, t.Shape[len(t.Shape)-1:]}.Bytes(nil)
		if !ok {
			return Cost{}, fmt.Errorf("rows of %s %v", n.Args[0], t)
		}
		return Cost{Bytes: rows*row + idx + out}, nil
	case "attention":
		return attentionCost(n, env, io)
	case "mla_attention":
		return mlaCost(n, env, io)
	case "moe":
		return moeCost(n, env)
	case "qkv_rope":
		b, err := io()
		if err != nil {
			return Cost{}, err
		}
		var f int64
		bias, norm, _ := QKVRopeArgs(n.Attrs, len(n.Args))
		for i, o := range n.Outs {
			e, err := elems(o)
			if err != nil {
				return Cost{}, err
			}
			if i < 2 { // q, k rotated (and normed)
				f += 3 * e
				if norm >= 0 {
					f += 4 * e
				}
			}
			if bias >= 0 {
				f += e
			}
		}
		return Cost{FLOPs: f, Bytes: b}, nil
	}
	k, ok := perElement[n.Op]
	if !ok {
		return Cost{}, fmt.Errorf("no cost rule for op %s", n.Op)
	}
	b, err := io()
	if err != nil {
		return Cost{}, err
	}
	e := int64(0)
	src := n.Outs[0]
	if n.Op == "sum_rows" || n.Op == "cross_entropy" {
		src = n.Args[0]
	}
	if e, err = elems(src); err != nil {
		return Cost{}, err
	}
	return Cost{FLOPs: k * e, Bytes: b}, nil
}

// attentionCost: q, k, v read, k, v written into the cache, the result written, and each row's
// context of K and V rows read.
func attentionCost(n *Node, env CostEnv, io func() (int64, error)) (Cost, error) {
	b, err := io()
	if err != nil {
		return Cost{}, err
	}
	heads, kvh, hd := n.Attrs.Int("heads", 0), n.Attrs.Int("kv_heads", 0), n.Attrs.Int("head_dim", 0)
	window := n.Attrs.Int("window", 0)
	rows, ok := n.Args[0].Type.Shape[:1].Elems(env.Sym)
	if !ok {
		return Cost{}, fmt.Errorf("the rows of %s %v are not bound", n.Args[0], n.Args[0].Type)
	}
	if env.Context != nil && len(env.Context) != rows {
		return Cost{}, fmt.Errorf("%d context lengths for %d rows", len(env.Context), rows)
	}
	var ctx int64
	for i := range rows {
		c := int64(i + 1)
		if env.Context != nil {
			c = int64(env.Context[i])
		}
		if window > 0 {
			c = min(c, window)
		}
		ctx += c
	}
	b += 2 * 4 * kvh * hd * ctx // K and V rows, f32
	b += 2 * 4 * kvh * hd * int64(rows)
	return Cost{FLOPs: 4*heads*hd*ctx + 5*heads*ctx, Bytes: b}, nil
}
