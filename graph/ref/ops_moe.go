// This file holds the reference of moe (graph/ops_moe.go): every row routed on its own, each
// chosen expert's SwiGLU feed-forward computed in full, in float64.
package ref

import (
	"math"
	"sort"

	"github.com/llmcloud/llmcloud/graph"
)

// MoERoute returns the experts a row of router logits picks and their weights, by the moe op's
// attributes: scores by gating (softmax or sigmoid), the k highest (ties: the lower index),
// their scores divided by their sum when norm is set, times scale.
func MoERoute(logits []float64, k int, a graph.Attrs) (experts []int, weights []float64) {
	return MoERouteBias(logits, nil, k, a)
}

// MoERouteBias is MoERoute with DeepSeek-V3's routing (graph/ops_moe.go): the experts are
// chosen by the scores plus bias (nil: none), among the groups_used groups of highest score
// (a group's: the sum of its group_top highest biased scores) when groups > 1, and weighted by
// the unbiased scores.
func MoERouteBias(logits, bias []float64, k int, a graph.Attrs) (experts []int, weights []float64) {
	scores := make([]float64, len(logits))
	if a.Str("gating", graph.MoESoftmax) == graph.MoESigmoid {
		for i, v := range logits {
			scores[i] = sigmoid(v)
		}
	} else {
		softmaxRow(scores, logits)
	}
	choice := append([]float64(nil), scores...)
	for i := range bias {
		choice[i] += bias[i]
	}
	if g, used, top := graph.MoEGroups(a); g > 1 {
		size := len(choice) / g
		gs := make([]float64, g)
		for j := range gs {
			grp := append([]float64(nil), choice[j*size:(j+1)*size]...)
			sort.Sort(sort.Reverse(sort.Float64Slice(grp)))
			for _, v := range grp[:top] {
				gs[j] += v
			}
		}
		gorder := make([]int, g)
		for i := range gorder {
			gorder[i] = i
		}
		sort.SliceStable(gorder, func(i, j int) bool { return gs[gorder[i]] > gs[gorder[j]] })
		keep := make([]bool, g)
		for _, j := range gorder[:used] {
			keep[j] = true
		}
		for i := range choice {
			if !keep[i/size] {
				choice[i] = math.Inf(-1)
			}
		}
	}
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return choice[order[i]] > choice[order[j]] })
	experts = order[:k]
	weights = make([]float64, k)
	var sum float64
	for i, e := range experts {
		weights[i] = scores[e]
		sum += scores[e]
	}
	scale := a.Float("scale", 1)
	for i := range weights {
		if a.Int("norm", 0) != 0 {
			weights[i] /= sum
		}
		weights[i] *= scale
	}
	return experts, weights
}

func init() {
	opFuncs["moe"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		x, router, gate, up, down := t[0], t[1], t[2], t[3], t[4]
		// With expert_lo (expert parallelism) the stacks hold experts [lo, lo+held) of the
		// router's E; the chosen experts outside it add nothing.
		E, held, F, D := router.Shape[0], gate.Shape[0], gate.Shape[1], gate.Shape[2]
		lo := int(a.Int("expert_lo", 0))
		k := int(a.Int("experts_used", 0))
		n := x.Shape[0]
		y := zerosF(x.Shape)
		logits := make([]float64, E)
		h := make([]float64, F)
		var bias []float64
		if graph.MoEBiasArgs(a) == 1 {
			bias = t[len(t)-1].F
			t = t[:len(t)-1]
		}
		// gpt-oss: biases of the router, the experts' gate, up and down; its activation.
		zero := func(n int) []float64 { return make([]float64, n) }
		rb, gb, ub, db := zero(E), zero(E*F), zero(E*F), zero(E*D)
		if graph.MoEExpertBiases(a) {
			rb, gb, ub, db = t[len(t)-4].F, t[len(t)-3].F, t[len(t)-2].F, t[len(t)-1].F
			t = t[:len(t)-4]
		}
		act := func(g, u float64) float64 { return silu(g) * u }
		if a.Str("act", graph.MoESwiGLU) == graph.MoESwiGLUOAI {
			al, l := a.Float("alpha", 1.702), a.Float("limit", 7)
			act = func(g, u float64) float64 { return SwigluOAI(g, u, al, l) }
		}
		for r := 0; r < n; r++ {
			xr := x.F[r*D : (r+1)*D]
			for e := 0; e < E; e++ {
				logits[e] = dot(xr, router.F[e*D:(e+1)*D]) + rb[e]
			}
			experts, weights := MoERouteBias(logits, bias, k, a)
			for i, e := range experts {
				if e < lo || e >= lo+held {
					continue
				}
				e -= lo
				for j := 0; j < F; j++ {
					g := dot(xr, gate.F[(e*F+j)*D:(e*F+j+1)*D]) + gb[e*F+j]
					u := dot(xr, up.F[(e*F+j)*D:(e*F+j+1)*D]) + ub[e*F+j]
					h[j] = act(g, u)
				}
				for o := 0; o < D; o++ {
					y.F[r*D+o] += weights[i] * (dot(h, down.F[(e*D+o)*F:(e*D+o+1)*F]) + db[e*D+o])
				}
			}
		}
		if len(t) >= 8 {
			sharedExpert(x, t[5], t[6], t[7], t[8:], y)
		}
		return []*Tensor{y}, nil
	}
}

// sharedExpert adds, to every row of y, the shared expert's SwiGLU feed-forward of x's row,
// times sigmoid(x·gate_inpᵀ) when gateInp holds that [1,D] row.
func sharedExpert(x, gate, up, down *Tensor, gateInp []*Tensor, y *Tensor) {
	F, D := gate.Shape[0], gate.Shape[1]
	h := make([]float64, F)
	for r := 0; r < x.Shape[0]; r++ {
		xr := x.F[r*D : (r+1)*D]
		for j := 0; j < F; j++ {
			h[j] = silu(dot(xr, gate.F[j*D:(j+1)*D])) * dot(xr, up.F[j*D:(j+1)*D])
		}
		s := 1.0
		if len(gateInp) == 1 {
			s = sigmoid(dot(xr, gateInp[0].F))
		}
		for o := 0; o < D; o++ {
			y.F[r*D+o] += s * dot(h, down.F[o*F:(o+1)*F])
		}
	}
}

func dot(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
