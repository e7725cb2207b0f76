// This file is ShardTP for serving: the forward of one tensor-parallel rank without the
// training-only parts, and logits gathered whole on every rank.
package graph

import (
	"fmt"
	"strings"
)

// TPOptions are the choices of a tensor-parallel serving shard.
type TPOptions struct {
	// ExpertParallel splits a mixture of experts by expert (vLLM's --enable-expert-parallel):
	// rank r holds experts [r·E/size, (r+1)·E/size) whole. Without it every rank holds every
	// expert's block of rows (gate, up) and columns (down), as a dense feed-forward's.
	ExpertParallel bool
}

func (o TPOptions) mode() tpMode {
	if o.ExpertParallel {
		return tpServeEP
	}
	return tpServe
}

// TPSplitDim is how ShardTPServing (with o) divides the weight called name between ranks: the
// dimension split into equal contiguous blocks, rank r holding block r (0: rows of a matrix or
// the experts of a stack [E,R,C]; 1: its columns, or each expert's rows; 2: each expert's
// columns), or -1 when every rank holds all of it.
func TPSplitDim(name string, o TPOptions) int {
	s := splitOf(name, o.mode())
	if s == tpReplicated {
		return -1
	}
	rank := 2
	if strings.Contains(name, "_exps.") {
		rank = 3
	}
	return s.dim(rank)
}

// ShardTPServing returns the serving graph of rank (of size ranks) for g, a model.BuildGraph
// graph without a loss (or a pipeline stage of one, graph.Cut): ShardTP's graph, its tp_copy
// nodes (identities forward, whose only job is the backward all-reduce) removed, and the
// vocab-parallel logits followed by an all_gather_last, so every rank's output is the whole
// [rows, vocab] logits (a stage ending before them outputs the residual stream, whole on
// every rank). A mixture of experts is split as o says, each moe's partial sum all-reduced.
// Size 1 gives a copy of g.
func ShardTPServing(g *Graph, rank, size int, o TPOptions) (*Graph, error) {
	sg, err := shardTP(g, rank, size, o.mode())
	if err != nil || size == 1 {
		return sg, err
	}
	if len(sg.Outputs) != 1 {
		return nil, fmt.Errorf("graph: tensor-parallel serving shard: %d outputs, want the logits alone", len(sg.Outputs))
	}
	alias := map[*Value]*Value{}
	var nodes []*Node
	for _, n := range sg.Nodes {
		if n.Op == "tp_copy" {
			alias[n.Outs[0]] = n.Args[0]
			continue
		}
		for i, a := range n.Args {
			if b, ok := alias[a]; ok {
				n.Args[i] = b
			}
		}
		nodes = append(nodes, n)
	}
	sg.Nodes = nodes
	out := sg.Outputs[0]
	if b, ok := alias[out]; ok {
		out = b
	}
	if d := out.Def; d == nil || d.Op != "matmul" || TPSplitDim(d.Args[1].Name, o) != 0 {
		// A pipeline stage before the last (graph.Cut): its output is the residual stream,
		// whole on every rank after the all-reduces.
		if err := Verify(sg); err != nil {
			return nil, fmt.Errorf("graph: tensor-parallel serving shard: %w", err)
		}
		return sg, nil
	}
	part := &Value{Name: out.Name + ".part", Type: out.Type, Kind: KindResult, Def: out.Def, Index: out.Index}
	out.Def.Outs[out.Index] = part
	gn := &Node{Op: "all_gather_last", Args: []*Value{part}, Attrs: Attrs{"size": Int(int64(size)), "what": Str("logits")}, Outs: []*Value{out}}
	out.Def, out.Index = gn, 0
	if err := gn.reinfer(); err != nil {
		return nil, &NodeError{Node: gn.Name(), Op: gn.Op, Err: err}
	}
	sg.Nodes = append(sg.Nodes, gn)
	sg.Outputs[0] = out
	if err := Verify(sg); err != nil {
		return nil, fmt.Errorf("graph: tensor-parallel serving shard: %w", err)
	}
	return sg, nil
}
