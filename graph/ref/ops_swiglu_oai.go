// This file holds the reference of swiglu_oai (graph/ops_swiglu_oai.go), in float64.
package ref

import (
	"math"

	"github.com/llmcloud/llmcloud/graph"
)

// SwigluOAI is g'·sigmoid(alpha·g')·(u'+1) with g' = min(g, limit), u' = clamp(u, ±limit).
func SwigluOAI(g, u, alpha, limit float64) float64 {
	g = math.Min(g, limit)
	u = math.Max(-limit, math.Min(u, limit))
	return g / (1 + math.Exp(-alpha*g)) * (u + 1)
}

func init() {
	opFuncs["swiglu_oai"] = func(_ *ctx, t []*Tensor, a graph.Attrs) ([]*Tensor, error) {
		al, l := a.Float("alpha", 1.702), a.Float("limit", 7)
		return []*Tensor{binary(t[0], t[1], func(g, u float64) float64 { return SwigluOAI(g, u, al, l) })}, nil
	}
}
