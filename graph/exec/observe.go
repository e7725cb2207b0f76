// This file is the executor's matmul observer: with one attached (SetMatMulObserver), every
// matmul and matmul_multi node hands it its input rows and the names of the weights that
// multiply them before it runs, so calibration (package quant/calib; model.W8A8Stats for
// SmoothQuant) sees the activations of the one model graph in the same forward pass that
// serves. Without one, Run checks a nil func once per matmul.
package exec

// MatMulObserver receives a matmul's input x ([rows, k], valid only during the call) and the
// names of the weight matrices it multiplies (several for matmul_multi: q/k/v or gate/up
// after fusion).
type MatMulObserver func(x []float32, rows, k int, weights []string)

// SetMatMulObserver attaches obs to p (nil: none).
func (p *Program) SetMatMulObserver(obs MatMulObserver) { p.observe = obs }
