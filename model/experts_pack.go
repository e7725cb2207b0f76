// This file registers the experts of a mixture of experts for the Q8_0/Q4_0 prefill packs
// (kernels.PrepackQ8), as serving.go does for 2-D matrices: each expert's slice of a stacked
// [experts, rows, cols] weight is a matrix of its own to the matmul kernels, and the packs are
// found by the slice's data, so the executor's slices (graph/exec/moe.go) use them.
package model

import (
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// prepackExperts registers the expert slices of ws's 3-D Q8_0 and Q4_0 weights and returns
// those registered (for DropPackQ8 at Close).
func prepackExperts(ws map[string]*tensor.Tensor) []*tensor.Tensor {
	var out []*tensor.Tensor
	for _, t := range ws {
		if t == nil || len(t.Shape) != 3 || (t.Type != tensor.Q8_0 && t.Type != tensor.Q4_0) {
			continue
		}
		for e := 0; e < t.Shape[0]; e++ {
			s, err := t.Slice(e)
			if err == nil && kernels.PrepackQ8(s) {
				out = append(out, s)
			}
		}
	}
	return out
}
