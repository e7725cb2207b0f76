// This file implements the Q4_K_M mix: llama-quantize's recipe for `Q4_K_M`, which stores most
// weights as Q4_K but gives the tensors that hurt quality most when squeezed more bits:
//
//   - output.weight (or token_embd.weight when the output is tied to it): Q6_K;
//   - attn_v.weight and ffn_down.weight (ffn_down_exps.weight) of the layers i where moreBits(i, layers) holds: Q6_K,
//     where moreBits keeps the first and last eighth of the layers and every third one between;
//   - everything else 2-D: Q4_K. Rows not a multiple of 256 fall back as outType describes.
//
// A file written with --type q4_k_m declares general.file_type 15 (LLAMA_FTYPE_MOSTLY_Q4_K_M).
package convert

import (
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/tensor"
)

// mixQ4KM is the --type name of the mix.
const mixQ4KM = "q4_k_m"

// moreBits reports whether layer i of n gets the larger type in the Q4_K_M mix.
func moreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// q4kmType is the Q4_K_M type of the 2-D tensor name in a model of the given layer count;
// tiedOutput says the model has no output.weight (token_embd.weight doubles as the output).
func q4kmType(name string, layers int, tiedOutput bool) tensor.DType {
	if name == "output.weight" || (tiedOutput && name == "token_embd.weight") {
		return tensor.Q6_K
	}
	if strings.HasSuffix(name, ".attn_v.weight") || strings.HasSuffix(name, ".ffn_down.weight") ||
		strings.HasSuffix(name, ".ffn_down_exps.weight") || strings.HasSuffix(name, ".ffn_down_shexp.weight") {
		if i, ok := layerIndex(name); ok && moreBits(i, layers) {
			return tensor.Q6_K
		}
	}
	return tensor.Q4_K
}

// layerIndex parses N from "blk.N.<rest>".
func layerIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	return i, err == nil
}
