// Finite-difference cases of moe's backward and of its load-balancing loss (run by
// TestOpGradsMatchFiniteDifferences): softmax and sigmoid gating, normalised or not, scaled,
// with and without a shared expert and its gate. The top-k choice is a constant of the
// backward; random operands keep every row's scores apart by far more than the step h.
package ref_test

import (
	"fmt"
	"math/rand"

	"github.com/llmcloud/llmcloud/graph"
)

func moeCases(r *rand.Rand) []opCase {
	in := func(lo, hi int) int { return lo + r.Intn(hi-lo+1) }
	moe := func(gating string, norm int64, scale float64, shared int) opCase {
		n, E, F, D := in(1, 5), in(2, 4), in(1, 3), in(1, 4)
		k := in(1, E)
		if norm == 1 {
			k = in(2, E) // one renormalised expert weighs 1 whatever the router: no gradient
		}
		return opCase{name: fmt.Sprintf("moe %s norm=%d scale=%g shared=%d k=%d/%d", gating, norm, scale, shared, k, E),
			build: func(b *graph.Builder) []*graph.Value {
				a := graph.Attrs{"experts_used": graph.Int(int64(k)), "gating": graph.Str(gating), "norm": graph.Int(norm),
					"scale": graph.Float(scale)}
				args := []*graph.Value{b.Weight("x", f32(n, D)), b.Weight("router", f32(E, D)),
					b.Weight("gate", f32(E, F, D)), b.Weight("up", f32(E, F, D)), b.Weight("down", f32(E, D, F))}
				if shared > 0 {
					fs := in(1, 3)
					args = append(args, b.Weight("sgate", f32(fs, D)), b.Weight("sup", f32(fs, D)), b.Weight("sdown", f32(D, fs)))
					if shared > 1 {
						args = append(args, b.Weight("sinp", f32(1, D)))
					}
				}
				return []*graph.Value{b.Op("moe", a, args...)}
			}}
	}
	aux := func(gating string) opCase {
		n, E, D := in(1, 6), in(2, 5), in(1, 4)
		k := in(1, E)
		return opCase{name: fmt.Sprintf("moe_aux %s k=%d/%d", gating, k, E), build: func(b *graph.Builder) []*graph.Value {
			a := graph.Attrs{"experts_used": graph.Int(int64(k)), "gating": graph.Str(gating), "weight": graph.Float(0.7)}
			return []*graph.Value{b.Op("moe_aux", a, b.Weight("x", f32(n, D)), b.Weight("router", f32(E, D)))}
		}}
	}
	return []opCase{
		moe(graph.MoESoftmax, 1, 1, 0), moe(graph.MoESoftmax, 0, 1, 0), moe(graph.MoESigmoid, 1, 2.5, 0),
		moe(graph.MoESoftmax, 0, 1, 1), moe(graph.MoESoftmax, 0, 1, 2), moe(graph.MoESigmoid, 0, 0.5, 2),
		aux(graph.MoESoftmax), aux(graph.MoESigmoid),
	}
}
