// This file registers the ops of tensor parallelism (Megatron-LM, Shoeybi et al. 2019): the
// collectives over the tensor-parallel group and the vocab-parallel embedding and loss, which
// ShardTP (shard_tp.go) writes into a graph for one rank. Their backward rules are in
// grad_comm.go.
//
// A collective is run by every rank of the group, in the same order, on values of the same
// type; the executor binds the group (graph/exec/trainexec: Options.TP). graph/ref runs them
// as a group of one rank. The optional string attribute "what" names the reduction in errors
// (a broken group is reported as "tensor-parallel <what>: ...").
//
//	tp_copy(x)             identity forward; its backward all-reduces (Megatron's f)
//	all_reduce_sum(x)      the element-wise sum of every rank's x; backward identity (g)
//	embedding_shard(t, i)  rows i-lo of this rank's table rows [lo, lo+V), zeros elsewhere
//	cross_entropy_shard    the mean cross-entropy of logits whose columns are spread over ranks
package graph

import "github.com/llmcloud/llmcloud/tensor"

func init() {
	what := AttrSpec{"what", AttrString, false}
	register(&OpDef{Name: "tp_copy", MinArgs: 1, MaxArgs: 1, Attrs: []AttrSpec{what},
		Doc:   "tensor parallelism's f: x unchanged (every rank holds the same x); its gradient is the all_reduce_sum of the ranks' gradients",
		Infer: unaryType})
	register(&OpDef{Name: "all_reduce_sum", MinArgs: 1, MaxArgs: 1, Attrs: []AttrSpec{what},
		Doc:   "collective, tensor parallelism's g: the element-wise sum of x over the ranks of the group, the same on every rank; its gradient passes unchanged (tp_copy)",
		Infer: unaryType})
	register(&OpDef{Name: "embedding_shard", MinArgs: 2, MaxArgs: 2, Attrs: []AttrSpec{{"lo", AttrInt, true}},
		Doc: "vocab-parallel embedding: this rank holds rows [lo, lo+V) of the table [V,D] (f32); row k of the result is table[ids[k]-lo] " +
			"when ids[k] is in that range and zeros otherwise, ids i32[..] being whole-vocabulary ids -> f32[..,D] (summed over ranks: the lookup)",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			if err := want(at.Int("lo", -1) >= 0, "lo must be >= 0"); err != nil {
				return nil, err
			}
			return ops["embedding"].Infer(a, nil)
		}})
	register(&OpDef{Name: "embedding_shard_grad", MinArgs: 3, MaxArgs: 3, Attrs: []AttrSpec{{"lo", AttrInt, true}},
		Doc: "gradient of embedding_shard's table: rows of dy f32[..,D] whose ids are in [lo, lo+V) added into a zero f32[V,D] at ids-lo, the others dropped; table[V,D] gives the shape only",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			if err := want(at.Int("lo", -1) >= 0, "lo must be >= 0"); err != nil {
				return nil, err
			}
			return ops["embedding_grad"].Infer(a, nil)
		}})
	register(&OpDef{Name: "cross_entropy_shard", MinArgs: 2, MaxArgs: 2, Attrs: []AttrSpec{{"lo", AttrInt, true}},
		Doc: "collective, vocab-parallel cross_entropy: logits f32[s,V] are this rank's columns [lo, lo+V) of the whole logits, targets i32[s] " +
			"whole-vocabulary ids in range; -> f32[] the mean over rows of log Σ exp(z - m) + m - z_target over the whole vocabulary, m the row's maximum, " +
			"the same on every rank. It reduces s row maxima (max) and s sums of exponentials with s target logits (sum, each rank adding 0 for targets it does not hold), never the logits",
		Infer: crossEntropyShardType})
	register(&OpDef{Name: "cross_entropy_shard_grad", MinArgs: 3, MaxArgs: 3, Attrs: []AttrSpec{{"lo", AttrInt, true}},
		Doc: "gradient of cross_entropy_shard's logits (args dloss f32[], logits, targets): this rank's columns of dloss * (softmax(whole logits) - onehot(target)) / rows; " +
			"the softmax is the forward's (an executor keeps it; computing it again takes the forward's reductions)",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			if err := want(a[0].Equal(T(tensor.F32)), "dloss must be f32[], is %v", a[0]); err != nil {
				return nil, err
			}
			if _, err := crossEntropyShardType(a[1:], at); err != nil {
				return nil, err
			}
			return []Type{a[1]}, nil
		}})
}

func crossEntropyShardType(a []Type, at Attrs) ([]Type, error) {
	if err := want(at.Int("lo", -1) >= 0, "lo must be >= 0"); err != nil {
		return nil, err
	}
	return ops["cross_entropy"].Infer(a, nil)
}

func init() {
	register(&OpDef{Name: "all_gather_last", MinArgs: 1, MaxArgs: 1,
		Attrs: []AttrSpec{{"size", AttrInt, true}, {"what", AttrString, false}},
		Doc: "collective: x f32[..,C] is this rank's block of C columns of a value of size·C columns, blocks in rank order; " +
			"-> f32[..,size·C], the whole value on every rank (serving's vocab-parallel logits, ShardTPServing)",
		Infer: func(a []Type, at Attrs) ([]Type, error) {
			size := at.Int("size", 0)
			if err := want(size >= 1, "size must be >= 1, is %d", size); err != nil {
				return nil, err
			}
			if err := want(isFloat(a[0]) && len(a[0].Shape) >= 1 && a[0].Shape.Last().Known(), "x must be f32[..,C], is %v", a[0]); err != nil {
				return nil, err
			}
			t := a[0]
			t.Shape = append(Shape(nil), t.Shape...)
			t.Shape[len(t.Shape)-1] = D(t.Shape.Last().N * int(size))
			return []Type{t}, nil
		}})
}
