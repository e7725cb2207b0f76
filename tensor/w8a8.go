// This file holds the W8A8 weight type: int8 values with one float32 scale per row (output
// channel), as SmoothQuant and vLLM's W8A8 use; the activations it is multiplied with are
// quantized per token at run time (kernels/w8a8.go). llmcloud makes these tensors at load
// (model.ApplyW8A8, `--w8a8`); GGUF has no such type, so they are never written to a file.
//
// Row layout (k elements): k int8 values q, then the float32 scale d (little-endian);
// the value of element i is d·q[i]. q is in [-127, 127] (never -128).
package tensor

import (
	"encoding/binary"
	"math"
)

// QuantizeRowW8A8 writes the W8A8 row of src (len(src)+4 bytes) to dst: d = max|x|/127,
// q = round-half-even(x/d) (all zero, d = 0, for a zero row).
func QuantizeRowW8A8(src []float32, dst []byte) {
	k := len(src)
	var bits uint32 // max |x| compared as bits (the order of non-negative floats)
	for _, v := range src {
		bits = max(bits, math.Float32bits(v)&^(1<<31))
	}
	amax := math.Float32frombits(bits)
	d := amax / 127
	if amax == 0 {
		clear(dst[:k])
		binary.LittleEndian.PutUint32(dst[k:], 0)
		return
	}
	id := 127 / amax
	for i, v := range src {
		// |v·id| <= 127: adding and subtracting 1.5·2^23 rounds to the nearest integer, ties
		// to even (float32 arithmetic in round-to-nearest-even mode), as math.RoundToEven.
		r := (v*id + 12582912) - 12582912
		dst[i] = byte(int8(max(-127, min(127, int32(r)))))
	}
	binary.LittleEndian.PutUint32(dst[k:], math.Float32bits(d))
}

// dequantW8A8 decodes one W8A8 row (len(dst) values + scale).
func dequantW8A8(src []byte, dst []float32) {
	k := len(dst)
	d := math.Float32frombits(binary.LittleEndian.Uint32(src[k:]))
	for i := range dst {
		dst[i] = d * float32(int8(src[i]))
	}
}
