// This file decides whether the model's Q8_0 and Q4_0 matrices get the prefill tiles' packed
// copies (kernels.PrepackQ8): like the F16 packs, only when every pack fits a quarter of the
// available memory.
package model

import "github.com/llmcloud/llmcloud/tensor"

// q8PacksFit reports whether the packed copies of ws's Q8_0 matrices (144 bytes per 136 of
// the stored rows: the AVX2 pack; the AMX one takes the stored size) and Q4_0 matrices (at most 80 bytes per 72: the AVX2 pack; the VNNI one
// takes the stored size), together with those of its F16 matrices (as many bytes again), fit
// in a quarter of avail, the machine's available memory (true when unknown, 0).
func q8PacksFit(ws map[string]*tensor.Tensor, avail int64) bool {
	var n, q, q4 int64
	for _, t := range ws {
		if len(t.Shape) < 2 { // matrices and stacked experts
			continue
		}
		switch t.Type {
		case tensor.F16:
			n += int64(len(t.Data))
		case tensor.Q8_0:
			q += int64(len(t.Data))
		case tensor.Q4_0:
			q4 += int64(len(t.Data))
		}
	}
	n += q/136*144 + q4/72*80
	return q+q4 == 0 || avail == 0 || n <= avail/4
}
