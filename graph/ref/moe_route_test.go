package ref

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
)

// hfV3Gate is transformers' DeepseekV3 MoEGate (topk_method noaux_tc) step by step:
// sigmoid scores; scores_for_choice = scores + e_score_correction_bias; group scores = the
// sum of each group's top-2 of those; the topk_group best groups; the other experts masked
// (-inf here; transformers fills 0.0, the same whenever the biased scores are positive);
// top-k of the masked scores; weights = the unbiased scores gathered, divided by their sum,
// times routed_scaling_factor.
func hfV3Gate(logits, bias []float64, nGroup, topkGroup, k int, scale float64) ([]int, []float64) {
	E := len(logits)
	scores := make([]float64, E)
	forChoice := make([]float64, E)
	for i, l := range logits {
		scores[i] = 1 / (1 + math.Exp(-l))
		forChoice[i] = scores[i] + bias[i]
	}
	per := E / nGroup
	type gs struct {
		g int
		s float64
	}
	var groups []gs
	for g := 0; g < nGroup; g++ {
		v := append([]float64(nil), forChoice[g*per:(g+1)*per]...)
		sort.Float64s(v)
		groups = append(groups, gs{g, v[len(v)-1] + v[len(v)-2]})
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].s > groups[j].s })
	mask := make([]bool, nGroup)
	for _, x := range groups[:topkGroup] {
		mask[x.g] = true
	}
	type es struct {
		e int
		s float64
	}
	var cand []es
	for e := 0; e < E; e++ {
		s := math.Inf(-1)
		if mask[e/per] {
			s = forChoice[e]
		}
		cand = append(cand, es{e, s})
	}
	sort.SliceStable(cand, func(i, j int) bool { return cand[i].s > cand[j].s })
	idx, w := make([]int, k), make([]float64, k)
	var sum float64
	for i := 0; i < k; i++ {
		idx[i], w[i] = cand[i].e, scores[cand[i].e]
		sum += w[i]
	}
	for i := range w {
		w[i] = w[i] / sum * scale
	}
	return idx, w
}

func TestMoERouteBiasMatchesHFV3Gate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ E, k, groups, used int }{{8, 2, 1, 1}, {16, 4, 4, 2}, {16, 3, 8, 3}, {32, 8, 8, 4}, {12, 2, 3, 1}} {
		a := graph.Attrs{"gating": graph.Str(graph.MoESigmoid), "norm": graph.Int(1), "scale": graph.Float(2.5),
			"groups": graph.Int(int64(c.groups)), "groups_used": graph.Int(int64(c.used)), "group_top": graph.Int(2)}
		for trial := 0; trial < 200; trial++ {
			logits, bias := make([]float64, c.E), make([]float64, c.E)
			for i := range logits {
				logits[i], bias[i] = rng.NormFloat64()*2, rng.NormFloat64()*0.5
			}
			ge, gw := MoERouteBias(logits, bias, c.k, a)
			we, ww := hfV3Gate(logits, bias, c.groups, c.used, c.k, 2.5)
			for i := range we {
				if ge[i] != we[i] || math.Abs(gw[i]-ww[i]) > 1e-12 {
					t.Fatalf("%+v trial %d: experts %v weights %v, transformers' gate %v %v", c, trial, ge, gw, we, ww)
				}
			}
		}
	}
}
