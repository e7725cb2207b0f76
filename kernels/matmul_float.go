// This file dispatches matmuls with float weights (F32, F16, BF16) to the fast kernels.
// (Stub: the fast float kernels are not written yet.)
package kernels

import "github.com/llmcloud/llmcloud/tensor"

// matmulFloat computes out = x · wᵀ for a float w ([n, k]; x is [m, k], out is [m, n]) and
// reports whether it did; false sends the call to the reference path.
func matmulFloat(p *Pool, out, x []float32, w *tensor.Tensor, m, n, k int) bool { return false }
