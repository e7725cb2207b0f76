// This file holds the backward rules of tensor parallelism's ops (ops_comm.go):
//
//	y = tp_copy(x)                 dx = all_reduce_sum(dy)
//	y = all_reduce_sum(x)          dx = tp_copy(dy)
//	y = embedding_shard(t, ids)    dt = embedding_shard_grad(dy, ids, t)
//	l = cross_entropy_shard(z, t)  dz = cross_entropy_shard_grad(dl, z, t)
//
// The pairs keep the attributes of their forward node (the reduction's name, the vocabulary
// offset), so an error in the backward's reduction names the forward's.
package graph

func init() {
	gradRules["tp_copy"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("all_reduce_sum", cloneAttrs(n.Attrs), dys[0])}
	}
	gradRules["all_reduce_sum"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("tp_copy", cloneAttrs(n.Attrs), dys[0])}
	}
	gradRules["embedding_shard"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("embedding_shard_grad", cloneAttrs(n.Attrs), dys[0], n.Args[1], n.Args[0]), nil}
	}
	gradRules["cross_entropy_shard"] = func(gb *gradBuilder, n *Node, dys []*Value, need []bool) []*Value {
		return []*Value{gb.op1("cross_entropy_shard_grad", cloneAttrs(n.Attrs), dys[0], n.Args[0], n.Args[1]), nil}
	}
}
