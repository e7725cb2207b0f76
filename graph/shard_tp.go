// This file is the tensor-parallel transformation: ShardTP rewrites a Llama-family graph
// (model.BuildGraph's, whole or a pipeline stage's, with or without WithLoss's loss) into the
// graph one rank of a tensor-parallel group runs, as Megatron-LM splits it (Shoeybi et al.
// 2019, section 3):
//
//   - column-parallel matmuls (attn_q/k/v, ffn_gate/up and the vocab-parallel output) take
//     the rank's block of their weight's rows; their input passes a tp_copy first (one per
//     input, shared by the matmuls reading it), whose gradient is the all-reduce;
//   - row-parallel matmuls (attn_output, ffn_down) take the rank's block of columns, and an
//     all_reduce_sum of their result follows;
//   - the embedding takes the rank's block of vocabulary rows (embedding_shard, then
//     all_reduce_sum), the loss over vocab-sharded logits becomes cross_entropy_shard;
//   - rope and attention count the rank's heads (heads, kv_heads divided by the size);
//   - a replicated weight normalising each head of a split value (Qwen3's q/k norms) passes a
//     tp_copy: each rank sees only its heads, so the weight's gradient is the all-reduce of the
//     ranks' parts.
//
// Every split is into size equal contiguous blocks, rank r holding block r, as train/nn's
// Shard cuts the weights. A graph without the loss keeps the rank's columns of the logits.
package graph

import (
	"fmt"
	"strings"
)

// tpSplit is how a weight is divided between tensor-parallel ranks.
type tpSplit int

const (
	tpReplicated tpSplit = iota // norms
	tpRows                      // rank r holds rows [r·R/size, (r+1)·R/size)
	tpCols                      // rank r holds columns [r·C/size, (r+1)·C/size) of every row
	tpExpertRows                // stacked experts [E,R,C]: rows [r·R/size, (r+1)·R/size) of every expert
	tpExperts                   // stacked experts [E,R,C]: experts [r·E/size, (r+1)·E/size)
)

// tpMode is what a shard is for: training (the experts of a mixture whole on every rank), or
// serving, with the experts split by their feed-forward width or, with expert parallelism,
// by expert.
type tpMode int

const (
	tpTrain tpMode = iota
	tpServe
	tpServeEP
)

// dim is the dimension s divides in a weight of rank dims.
func (s tpSplit) dim(rank int) int {
	switch s {
	case tpCols:
		return rank - 1
	case tpExpertRows:
		return 1
	}
	return 0
}

// splitOf is the split of the Llama family's weight called name (GGUF names) in mode. Serving
// splits a mixture of experts' feed-forward as the dense one (each expert's gate and up by
// rows, down by columns; the shared expert's the same) or, in tpServeEP, by expert; the router
// and the shared expert's gate row stay whole.
func splitOf(name string, mode tpMode) tpSplit {
	if name == "token_embd.weight" || name == "output.weight" {
		return tpRows
	}
	if mode != tpTrain {
		switch {
		case strings.HasSuffix(name, ".ffn_gate_exps.weight") || strings.HasSuffix(name, ".ffn_up_exps.weight"):
			if mode == tpServeEP {
				return tpExperts
			}
			return tpExpertRows
		case strings.HasSuffix(name, ".ffn_down_exps.weight"):
			if mode == tpServeEP {
				return tpExperts
			}
			return tpCols
		case strings.HasSuffix(name, ".ffn_gate_shexp.weight") || strings.HasSuffix(name, ".ffn_up_shexp.weight"):
			return tpRows
		case strings.HasSuffix(name, ".ffn_down_shexp.weight"):
			return tpCols
		}
	}
	for _, s := range []string{".attn_q.", ".attn_k.", ".attn_v.", ".ffn_gate.", ".ffn_up."} {
		if strings.Contains(name, s) && (strings.HasSuffix(name, ".weight") || strings.HasSuffix(name, ".bias")) {
			return tpRows
		}
	}
	if strings.HasSuffix(name, ".attn_output.weight") || strings.HasSuffix(name, ".ffn_down.weight") {
		return tpCols
	}
	return tpReplicated
}

// tpCopyName names the all-reduce of the gradient of a column-parallel matmul's input.
func tpCopyName(w string) string {
	switch {
	case strings.Contains(w, ".attn_"):
		return "attention input gradient"
	case strings.Contains(w, ".ffn_"):
		return "ffn input gradient"
	}
	return "output input gradient"
}

// ShardTP returns the graph rank (of size ranks) runs; g is not modified. A size of 1 gives a
// copy of g. It refuses a size that does not divide a split dimension or the heads, and a
// split weight used by an op it does not know how to shard.
func ShardTP(g *Graph, rank, size int) (*Graph, error) {
	return shardTP(g, rank, size, tpTrain)
}

func shardTP(g *Graph, rank, size int, mode tpMode) (*Graph, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("graph: tensor-parallel rank %d of %d", rank, size)
	}
	cg := g.Clone()
	if size == 1 {
		return cg, nil
	}
	names := map[string]bool{}
	for _, vs := range [][]*Value{cg.Inputs, cg.Weights} {
		for _, v := range vs {
			names[v.Name] = true
		}
	}
	for _, n := range cg.Nodes {
		for _, o := range n.Outs {
			names[o.Name] = true
		}
	}
	fresh := func(base string) string {
		name := base
		for i := 1; names[name]; i++ {
			name = fmt.Sprintf("%s.%d", base, i)
		}
		names[name] = true
		return name
	}
	split := map[*Value]tpSplit{}
	lo := map[*Value]int64{} // a row-split weight's first row on this rank
	for _, w := range cg.Weights {
		s := splitOf(w.Name, mode)
		if s == tpReplicated {
			continue
		}
		d := s.dim(len(w.Type.Shape))
		if (s == tpExperts || s == tpExpertRows) && len(w.Type.Shape) != 3 {
			return nil, fmt.Errorf("graph: tensor-parallel shard: %s %v is not a stack of experts", w, w.Type)
		}
		if len(w.Type.Shape) == 0 || !w.Type.Shape[d].Known() || w.Type.Shape[d].N%size != 0 {
			return nil, fmt.Errorf("graph: tensor-parallel size %d does not divide %s %v", size, w, w.Type)
		}
		k := w.Type.Shape[d].N / size
		w.Type.Shape[d] = D(k)
		split[w], lo[w] = s, int64(rank*k)
	}
	divHeads := func(n *Node, keys ...string) error {
		for _, k := range keys {
			h := n.Attrs.Int(k, 0)
			if h%int64(size) != 0 {
				return fmt.Errorf("tensor-parallel size %d does not divide %s = %d", size, k, h)
			}
			n.Attrs[k] = Int(h / int64(size))
		}
		return nil
	}
	copies := map[*Value]*Value{}
	vocabLo := map[*Value]int64{} // vocab-sharded logits -> their first column
	var nodes []*Node
	// reduce makes n write a fresh partial value and appends the all_reduce_sum giving n's
	// old result.
	reduce := func(n *Node, what string) {
		o := n.Outs[0]
		part := &Value{Name: fresh(o.Name + ".part"), Type: o.Type, Kind: KindResult, Def: n}
		n.Outs[0] = part
		r := &Node{Op: "all_reduce_sum", Args: []*Value{part}, Attrs: Attrs{"what": Str(what)}, Outs: []*Value{o}}
		o.Def, o.Index = r, 0
		nodes = append(nodes, r)
	}
	for _, n := range cg.Nodes {
		nodes = append(nodes, n)
		var err error
		switch n.Op {
		case "embedding":
			if t := n.Args[0]; split[t] == tpRows {
				n.Op, n.Attrs = "embedding_shard", Attrs{"lo": Int(lo[t])}
				err = n.reinfer()
				reduce(n, "embedding")
			}
		case "matmul":
			x, w := n.Args[0], n.Args[1]
			switch split[w] {
			case tpRows:
				c := copies[x]
				if c == nil {
					cn := &Node{Op: "tp_copy", Args: []*Value{x}, Attrs: Attrs{"what": Str(tpCopyName(w.Name))}}
					c = &Value{Name: fresh(x.Name + ".tp"), Type: x.Type, Kind: KindResult, Def: cn}
					cn.Outs = []*Value{c}
					copies[x] = c
					nodes = append(nodes[:len(nodes)-1], cn, n)
				}
				n.Args[0] = c
				if w.Name == "token_embd.weight" || w.Name == "output.weight" {
					vocabLo[n.Outs[0]] = lo[w]
				}
				err = n.reinfer()
			case tpCols:
				err = n.reinfer()
				what := "ffn_down"
				if strings.Contains(w.Name, ".attn_") {
					what = "attn_output"
				}
				reduce(n, what)
			}
		case "rope":
			if err = divHeads(n, "heads"); err == nil {
				err = n.reinfer()
			}
		case "attention":
			if err = divHeads(n, "heads", "kv_heads"); err == nil {
				err = n.reinfer()
			}
		case "rms_norm":
			x, w := n.Args[0], n.Args[1]
			ox, G := g.Value(x.Name), w.Type.Shape.Last().N
			if _, ok := split[w]; !ok && w.Kind == KindWeight && ox != nil && ox.Type.Shape.Last().N != G &&
				x.Type.Shape.Last() != ox.Type.Shape.Last() {
				// A per-head norm of a split value: this rank's heads, w whole on every rank.
				cn := &Node{Op: "tp_copy", Args: []*Value{w}, Attrs: Attrs{"what": Str("q/k norm weight gradient")}}
				c := &Value{Name: fresh(w.Name + ".tp"), Type: w.Type, Kind: KindResult, Def: cn}
				cn.Outs = []*Value{c}
				nodes = append(nodes[:len(nodes)-1], cn, n)
				n.Args[1] = c
			}
			err = n.reinfer()
		case "moe":
			var part bool
			if part, err = shardMoE(n, split, lo); err == nil {
				err = n.reinfer()
			}
			if part && err == nil {
				reduce(n, "moe")
			}
		case "cross_entropy":
			if l, ok := vocabLo[n.Args[0]]; ok {
				n.Op, n.Attrs = "cross_entropy_shard", Attrs{"lo": Int(l)}
			}
			err = n.reinfer()
		default:
			for _, a := range n.Args {
				if _, ok := split[a]; ok && n.Op != "add" {
					err = fmt.Errorf("tensor parallelism does not know how to shard %s's use of %s", n.Op, a)
				}
			}
			if err == nil {
				err = n.reinfer()
			}
		}
		if err != nil {
			return nil, &NodeError{Node: n.Name(), Op: n.Op, Err: err}
		}
	}
	cg.Nodes = nodes
	if err := Verify(cg); err != nil {
		return nil, fmt.Errorf("graph: tensor-parallel shard: %w", err)
	}
	return cg, nil
}

// shardMoE sets expert_lo on the moe node n when its experts are split by expert, and reports
// whether n's result is this rank's part of the sum (any of its weights split), which an
// all-reduce completes. gpt-oss's expert biases are not split: such a node is refused.
func shardMoE(n *Node, split map[*Value]tpSplit, lo map[*Value]int64) (part bool, err error) {
	for _, a := range n.Args {
		s, ok := split[a]
		if !ok {
			continue
		}
		part = true
		if s == tpExperts {
			n.Attrs["expert_lo"] = Int(lo[a])
		}
	}
	if part && MoEExpertBiases(n.Attrs) {
		return false, fmt.Errorf("tensor parallelism does not split the experts' biases (gpt-oss)")
	}
	return part, nil
}

// reinfer sets n's result types from its arguments' (after a shard changed them).
func (n *Node) reinfer() error {
	types, err := Infer(n.Op, argTypes(n.Args), n.Attrs)
	if err != nil {
		return err
	}
	if len(types) != len(n.Outs) {
		return fmt.Errorf("%d results, %d types", len(n.Outs), len(types))
	}
	for i, t := range types {
		n.Outs[i].Type = t
	}
	return nil
}
