// Finite-difference cases of the ops Phi-3's training adds: split (one piece unused, so its
// gradient is the zeros concat takes in its place), concat, and rope with LongRoPE's divisors
// and attention factor (mscale, which rope_grad keeps).
package ref_test

import (
	"math/rand"

	"github.com/llmcloud/llmcloud/graph"
)

func splitCases(r *rand.Rand) []opCase {
	in := func(lo, hi int) int { return lo + r.Intn(hi-lo+1) }
	R, a, b, c := in(1, 4), in(1, 5), in(1, 5), in(1, 5)
	n, heads, hd := in(1, 6), in(1, 3), 2*in(1, 4)
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	return []opCase{
		{name: "split", build: func(bd *graph.Builder) []*graph.Value {
			parts := bd.OpN("split", graph.Attrs{"sizes": graph.IntList(int64(a), int64(b), int64(c))}, []*graph.Value{bd.Weight("x", f32(2, R, a+b+c))})
			return []*graph.Value{parts[0], parts[2]} // parts[1] unused: its gradient is zeros
		}},
		{name: "concat", build: func(bd *graph.Builder) []*graph.Value {
			return []*graph.Value{bd.Op("concat", nil, bd.Weight("x", f32(R, a)), bd.Weight("y", f32(R, b)), bd.Weight("z", f32(R, c)))}
		}},
		{name: "rope mscale freqs", ints: map[string][]int32{"pos": pos}, build: func(bd *graph.Builder) []*graph.Value {
			at := graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(int64(hd)), "theta": graph.Float(100),
				"neox": graph.Int(1), "mscale": graph.Float(1.19)}
			return []*graph.Value{bd.Op("rope", at, bd.Weight("x", f32(n, heads*hd)), bd.Input("pos", i32(n)), bd.Weight("c_freqs", f32(hd/2)))}
		}},
	}
}
