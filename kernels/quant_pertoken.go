// This file decides when a matmul of a few tokens runs faster as one one-token decode per
// token (the four-stream GEMV kernels, back to back on the same weight) than as one GEMM on the
// tiles: with two tokens on AVX-512 VNNI without AMX, for Q8_0 weights up to about
// the L3 cache and for Q4_0 weights of short rows (k < 2048), where the 16-row pack tiles are
// weakest. The second token's pass finds the weight's rows in L3 (32 MiB on the Zen 5 VM), and
// the one-token kernels stream at the bandwidth where the tiles of two or three tokens do not
// (BenchmarkTwoTokens; docs/kernels-quant.md, "Two tokens as one-token decodes"). With three
// tokens the kernels measured the same way, but whole steps of three sequences did not gain.
package kernels

import (
	"os"

	"github.com/llmcloud/llmcloud/tensor"
)

// perTokenMaxBytes bounds the weights split per token: past about the L3 cache the second
// pass reads DRAM again (Q8_0 32000x2048, 70 MiB: 2095-3754 µs as decodes against the tiles'
// 2786-2899 in three runs; Q4_0 32000x2048, 37 MiB: 1741-1790 against 1622-1732).
const perTokenMaxBytes = 32 << 20

// usePerToken is false with LLMCLOUD_PER_TOKEN=0 (to compare the two), and lets tests switch
// the split off.
var usePerToken = os.Getenv("LLMCLOUD_PER_TOKEN") != "0"

// PerTokenFaster reports whether out = x · wᵀ for m tokens is faster as m one-token matmuls
// (Pool.MatMul with m = 1 on each token's row; MatMulShared likewise). The results are then
// each token's one-token results, which the GEMM's differ from in the last bits, so a
// batch-invariant caller must not split.
func PerTokenFaster(w *tensor.Tensor, m int) bool {
	if m != 2 || !usePerToken || Reference || !quantVNNI || amxOn() || len(w.Shape) != 2 || len(w.Data) > perTokenMaxBytes {
		return false
	}
	switch k := w.Shape[1]; w.Type {
	case tensor.Q8_0:
		return k%64 == 0
	case tensor.Q4_0:
		// On rows of k >= 2048 the 16-row packs are as fast (Q4_0 5632x2048, two tokens:
		// 213-216 µs against 223-229 as decodes).
		return k%128 == 0 && k < 2048
	}
	return false
}
