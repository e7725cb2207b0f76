// This file decides when a matmul of a few tokens runs faster as one-token decodes
// (MatMulDecodes) than as one GEMM on the tiles: two to eight tokens on the AVX-512 VNNI decode
// kernels without AMX, Q8_0 or Q4_0 weights (five to eight: see below). MatMulDecodes then reads the weight once for all
// the tokens with the T-token kernels (quant_decode2.go), in 0.9-1.55x one token's time, where
// the tiles take 1.3-2.6x (BenchmarkTwoTokens; docs/kernels-quant.md, "Two to four tokens in one
// decode pass"). Five to eight tokens (four plus the rest, chunk by chunk) are faster than the
// tiles on Q8_0 weights (1.25-1.75x) and on Q4_0 rows of 2048 values or more (1.05-1.2x); on
// shorter Q4_0 rows the Q4_0 pack tiles are as fast or faster (BenchmarkManyTokens).
package kernels

import (
	"os"

	"github.com/llmcloud/llmcloud/tensor"
)

// usePerToken is false with LLMCLOUD_PER_TOKEN=0 (to compare the two), and lets tests switch
// the choice off.
var usePerToken = os.Getenv("LLMCLOUD_PER_TOKEN") != "0"

// PerTokenFaster reports whether out = x · wᵀ for m tokens is faster with MatMulDecodes than
// with MatMul. MatMulDecodes gives each token its one-token results, which the GEMM's differ
// from in the last bits, so a batch-invariant caller must not switch.
func PerTokenFaster(w *tensor.Tensor, m int) bool {
	if !usePerToken || amxOn() || !decodeTKernels(m) || !decode2Eligible(w) {
		return false
	}
	return m <= 4 || w.Type == tensor.Q8_0 || w.Shape[1] >= 2048
}
