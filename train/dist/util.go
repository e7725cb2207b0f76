// This file holds small helpers of the package: where a slice sits inside another.
package dist

import "unsafe"

// offsetOf is the index of sub's first element relative to buf's (negative or beyond buf's
// capacity when sub is not inside buf's allocation).
func offsetOf(buf, sub []float32) int {
	d := uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if int(d)%4 != 0 {
		return -1
	}
	return int(int64(d) / 4)
}
