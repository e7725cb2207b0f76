// This file names the values of BuildGraph's graph that training's transformations cut and
// keep: the residual stream entering and leaving each block.
package model

import "fmt"

// BlockInput is the name of the residual stream entering block l (0 <= l <= Layers; l ==
// Layers: leaving the last block) in BuildGraph's graph: a pipeline stage's input and output,
// and the checkpoints of activation recomputation.
func BlockInput(l int) string {
	if l == 0 {
		return "x.in"
	}
	return fmt.Sprintf("x.%d", l-1)
}

// Residuals names the residual stream entering blocks lo..hi-1 and leaving block hi-1.
func Residuals(lo, hi int) []string {
	var names []string
	for l := lo; l <= hi; l++ {
		names = append(names, BlockInput(l))
	}
	return names
}
