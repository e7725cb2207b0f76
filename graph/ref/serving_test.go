// Tests of ref's qkv_rope (a serving fusion registered by the executor's branch; skipped
// while the op is not registered): equal to the unfused bias add, per-head rms_norm and rope.
package ref_test

import (
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/ref"
)

func TestQKVRopeEqualsUnfused(t *testing.T) {
	if graph.Op("qkv_rope") == nil {
		t.Skip("qkv_rope is not registered on this branch")
	}
	const n, h, kvh, hd = 5, 4, 2, 6
	for _, neox := range []int64{0, 1} {
		ra := func(heads int) graph.Attrs {
			return graph.Attrs{"heads": graph.Int(int64(heads)), "head_dim": graph.Int(hd), "theta": graph.Float(1000), "neox": graph.Int(neox)}
		}
		eps := graph.Attrs{"eps": graph.Float(1e-6)}
		build := func(fused bool) *graph.Graph {
			b := graph.NewBuilder("qkv")
			pos := b.Input("pos", i32(n))
			q, k, v := b.Weight("q", f32(n, h*hd)), b.Weight("k", f32(n, kvh*hd)), b.Weight("v", f32(n, kvh*hd))
			bq, bk, bv := b.Weight("bq", f32(h*hd)), b.Weight("bk", f32(kvh*hd)), b.Weight("bv", f32(kvh*hd))
			qn, kn, fr := b.Weight("qn", f32(hd)), b.Weight("kn", f32(hd)), b.Weight("freqs", f32(hd/2))
			if fused {
				a := graph.Attrs{"heads": graph.Int(h), "kv_heads": graph.Int(kvh), "head_dim": graph.Int(hd),
					"theta": graph.Float(1000), "neox": graph.Int(neox), "bias": graph.Int(1), "qk_norm": graph.Int(1), "eps": graph.Float(1e-6)}
				b.Output(b.OpN("qkv_rope", a, []*graph.Value{q, k, v, pos, bq, bk, bv, qn, kn, fr})...)
			} else {
				q = b.Op("rms_norm", eps, b.Op("add", nil, q, bq), qn)
				k = b.Op("rms_norm", eps, b.Op("add", nil, k, bk), kn)
				b.Output(b.Op("rope", ra(h), q, pos, fr), b.Op("rope", ra(kvh), k, pos, fr), b.Op("add", nil, v, bv))
			}
			g, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		unfused := build(false)
		vals := randValues(unfused, map[string][]int32{"pos": {0, 1, 2, 0, 9}}, 5)
		want, err := ref.Run(unfused, vals)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ref.Run(build(true), vals)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			for j, w := range want[i].F {
				if math.Abs(got[i].F[j]-w) > 1e-12 {
					t.Fatalf("neox=%d: result %d[%d]: fused %v, unfused %v", neox, i, j, got[i].F[j], w)
				}
			}
		}
	}
}
