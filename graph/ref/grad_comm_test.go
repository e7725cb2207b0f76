// Finite-difference cases of tensor parallelism's ops (run by TestOpGradsMatchFiniteDifferences
// as a group of one rank): the collectives, the vocab-parallel embedding with ids on and off
// this rank's block, and the vocab-parallel loss with targets on and off it.
package ref_test

import (
	"math/rand"

	"github.com/llmcloud/llmcloud/graph"
)

func commCases(r *rand.Rand) []opCase {
	in := func(lo, hi int) int { return lo + r.Intn(hi-lo+1) }
	R, K, S, V := in(1, 4), in(2, 6), in(1, 6), in(2, 5)
	lo := in(0, 3)
	ids := func(n int) []int32 { // ids of a vocabulary of lo+V+2: some before, some after the block
		x := make([]int32, n)
		for i := range x {
			x[i] = int32(r.Intn(lo + V + 2))
		}
		x[0] = int32(lo + r.Intn(V))
		return x
	}
	un := func(op string) opCase {
		return opCase{name: op, build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op(op, graph.Attrs{"what": graph.Str("test")}, b.Weight("x", f32(R, K)))}
		}}
	}
	at := graph.Attrs{"lo": graph.Int(int64(lo))}
	return []opCase{
		un("tp_copy"), un("all_reduce_sum"),
		{name: "embedding_shard", ints: map[string][]int32{"ids": ids(S)}, build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("embedding_shard", at, b.Weight("table", f32(V, K)), b.Input("ids", i32(S)))}
		}},
		{name: "cross_entropy_shard", ints: map[string][]int32{"t": ids(S)}, build: func(b *graph.Builder) []*graph.Value {
			return []*graph.Value{b.Op("cross_entropy_shard", at, b.Weight("z", f32(S, V)), b.Input("t", i32(S)))}
		}},
	}
}
