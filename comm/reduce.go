// Element-wise reductions of float32 buffers: sum through kernels.Add (AVX2 when the CPU has
// it, with its own plain-Go reference and tests in package kernels), max and min as plain loops.
package comm

import (
	"unsafe"

	"github.com/llmcloud/llmcloud/kernels"
)

// reduceInto sets dst[i] = op(dst[i], src[i]); dst and src are [n].
func reduceInto(dst, src []float32, op Op) {
	switch op {
	case Sum:
		kernels.Add(dst, src)
	case Max:
		src = src[:len(dst)]
		for i, v := range src {
			if v > dst[i] {
				dst[i] = v
			}
		}
	case Min:
		src = src[:len(dst)]
		for i, v := range src {
			if v < dst[i] {
				dst[i] = v
			}
		}
	}
}

// f32bytes views x ([n] float32) as its 4n bytes, without copying.
func f32bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}
