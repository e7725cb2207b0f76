// This file holds the fast Q8_K activation quantizer: the values and block scales from the
// AVX2 kernel quantQ8KAVX2 (internal/asmgen/quant/kquant_act.go), the sums of each 16 values
// added eight bytes at a time. Bit-identical to quantRowQ8KRef (TestQuantRowQ8KAVX2).
package kernels

import (
	"encoding/binary"
	"unsafe"
)

// quantRowQ8K quantizes one row to Q8_K blocks (see quantRowQ8KRef); the AVX2 kernel where
// available.
var quantRowQ8K = quantRowQ8KRef

// sumInt8x16 returns the sum of the 16 int8 values at q[0:16] (the method of sumInt8x32).
func sumInt8x16(q []int8) int16 {
	_ = q[15]
	const lo = 0x00ff00ff00ff00ff
	b := unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), 16)
	w0 := binary.LittleEndian.Uint64(b) ^ 0x8080808080808080
	w1 := binary.LittleEndian.Uint64(b[8:]) ^ 0x8080808080808080
	acc := w0&lo + (w0>>8)&lo + w1&lo + (w1>>8)&lo
	return int16(int32((acc*0x0001000100010001)>>48) - 128*16)
}

// quantRowQ8KFast is quantRowQ8KRef with the values and scales from quant (the assembly).
func quantRowQ8KFast(quant func(x *float32, qs *int8, d *float32, nb int)) func(x []float32, qs []int8, d []float32, bsums, bsum8 []int16) {
	return func(x []float32, qs []int8, d []float32, bsums, bsum8 []int16) {
		nb := len(d)
		if nb == 0 {
			return
		}
		_, _, _, _ = x[nb*256-1], qs[nb*256-1], bsums[nb*16-1], bsum8[nb*8-1]
		quant(&x[0], &qs[0], &d[0], nb)
		for g := range nb * 16 {
			bsums[g] = sumInt8x16(qs[16*g:])
		}
		for j := range nb * 8 {
			bsum8[j] = bsums[2*j] + bsums[2*j+1]
		}
	}
}
