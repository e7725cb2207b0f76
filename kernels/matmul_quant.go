// This file dispatches matmuls with block-quantized weights (Q8_0, Q4_0, Q4_K, Q6_K) to the
// fast kernels. (Stub: the fast quantized kernels are not written yet.)
package kernels

import "github.com/llmcloud/llmcloud/tensor"

// matmulQuant computes out = x · wᵀ for a quantized w ([n, k]; x is [m, k], out is [m, n]) and
// reports whether it did; false sends the call to the reference path.
func matmulQuant(p *Pool, out, x []float32, w *tensor.Tensor, m, n, k int) bool { return false }
