// This file holds MXFP4, the OCP microscaling format gpt-oss stores its experts in (ggml type
// 39, later than llama.cpp c392e5094): blocks of 32 values, one E8M0 byte (a power of two,
// 2^(e-127)) shared by 32 E2M1 4-bit floats (sign, 2 exponent bits, 1 mantissa bit: ±{0, 0.5,
// 1, 1.5, 2, 3, 4, 6}). A block is the scale byte then 16 bytes; as in ggml's block_mxfp4,
// element j (<16) is the low nibble of byte j, element 16+j its high nibble.
package tensor

import "math"

// MXFP4Values are the E2M1 values of the 16 nibbles, doubled (integers; the scale is halved).
var MXFP4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// MXFP4HalfScale is 2^(e-128): the block's E8M0 scale 2^(e-127) halved, to go with the doubled
// values of MXFP4Values.
func MXFP4HalfScale(e byte) float32 {
	return float32(math.Ldexp(1, int(e)-128))
}

func dequantMXFP4(src []byte, dst []float32) {
	for b := 0; b < len(dst)/32; b++ {
		blk := src[b*17 : b*17+17]
		d := MXFP4HalfScale(blk[0])
		out := dst[b*32 : b*32+32]
		for j := 0; j < 16; j++ {
			q := blk[1+j]
			out[j] = float32(MXFP4Values[q&0xf]) * d
			out[j+16] = float32(MXFP4Values[q>>4]) * d
		}
	}
}
