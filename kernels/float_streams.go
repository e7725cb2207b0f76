// This file implements the four-stream split of the float (F32, F16, BF16) decode rows
// (gemvFloatStreams), as gemvStreams does for Q8_0 (quant_streams.go): each worker's
// contiguous share of the rows is read as four quarters side by side, four rows per kernel
// call, one row of each quarter, so each quarter is one long sequential read. Every row's sum
// is the four-row kernel's, so it does not depend on the number of workers.
package kernels

import (
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// useFloatStreams selects gemvFloatStreams for the float decode rows (benchmarks compare it
// with gemvFloat's consecutive groups).
var useFloatStreams = true

// gemvFloatStreams computes out[r] = w[r]·x for rows [0, n) of data (dt, k columns; k8 = k
// rounded down to 8, the part the kernels cover).
func gemvFloatStreams(p *Pool, out, x []float32, dt tensor.DType, data []byte, n, k, k8 int) {
	rb := k * elemSize(dt)
	groups := func(_ int, sh streamShare, g0, g1 int) {
		var four [4]float32
		for g := g0; g < g1; g++ {
			r := sh.lo + g
			wp := unsafe.Pointer(&data[r*rb])
			switch dt {
			case tensor.F32:
				gemvF32x4((*float32)(wp), sh.s*rb, &x[0], k8, &four[0])
			case tensor.F16:
				gemvF16x4((*uint16)(wp), sh.s*rb, &x[0], k8, &four[0])
			case tensor.BF16:
				gemvBF16x4((*uint16)(wp), sh.s*rb, &x[0], k8, &four[0])
			}
			for j := range four {
				out[r+j*sh.s] = four[j]
			}
		}
	}
	// The rows left outside the quarters go through the same four-row kernel, the row read four
	// times (stride 0), so that every row's sum is the four-row kernel's whatever the split.
	rest := func(_, lo, hi int) {
		var four [4]float32
		for r := lo; r < hi; r++ {
			wp := unsafe.Pointer(&data[r*rb])
			switch dt {
			case tensor.F32:
				gemvF32x4((*float32)(wp), 0, &x[0], k8, &four[0])
			case tensor.F16:
				gemvF16x4((*uint16)(wp), 0, &x[0], k8, &four[0])
			case tensor.BF16:
				gemvBF16x4((*uint16)(wp), 0, &x[0], k8, &four[0])
			}
			out[r] = four[0]
		}
	}
	forStreams(p, n, groups, rest)
}
