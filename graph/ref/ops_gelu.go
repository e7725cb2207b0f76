// This file holds the reference GELU ops (tanh approximation): gelu, geglu and gelu_grad.
package ref

import (
	"math"

	"github.com/llmcloud/llmcloud/graph"
)

// geluC is sqrt(2/π), the tanh approximation's constant.
var geluC = math.Sqrt(2 / math.Pi)

// gelu is 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))).
func gelu(x float64) float64 { return 0.5 * x * (1 + math.Tanh(geluC*(x+0.044715*x*x*x))) }

// geluPrime is gelu's derivative.
func geluPrime(x float64) float64 {
	th := math.Tanh(geluC * (x + 0.044715*x*x*x))
	return 0.5*(1+th) + 0.5*x*(1-th*th)*geluC*(1+3*0.044715*x*x)
}

func init() {
	opFuncs["gelu"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{unary(t[0], gelu)}, nil
	}
	opFuncs["geglu"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{binary(t[0], t[1], func(g, u float64) float64 { return gelu(g) * u })}, nil
	}
	opFuncs["gelu_grad"] = func(_ *ctx, t []*Tensor, _ graph.Attrs) ([]*Tensor, error) {
		return []*Tensor{binary(t[0], t[1], func(d, x float64) float64 { return d * geluPrime(x) })}, nil
	}
}
