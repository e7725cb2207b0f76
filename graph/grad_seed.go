// This file differentiates a graph whose output is not a loss: a pipeline stage that is not
// the last one receives the gradient of its output from the next stage.
package graph

import "fmt"

// GradFrom returns a graph whose outputs are out followed by d L / d w for each w of wrt, where
// the gradient d L / d out is fed as a new input called seed (of out's type): the backward of
// a stage from the gradient of its output. With the stage's input (Cut) among wrt, the last
// outputs include the gradient to hand to the previous stage. g is not modified.
func GradFrom(g *Graph, out *Value, seed string, wrt []*Value) (*Graph, error) {
	if out == nil || out.Kind == KindWeight {
		return nil, fmt.Errorf("graph: grad: no value to differentiate from")
	}
	if !isIdent(seed) {
		return nil, fmt.Errorf("graph: grad: seed name %q", seed)
	}
	return grad(g, out, seed, wrt)
}
