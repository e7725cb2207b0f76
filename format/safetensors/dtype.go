// This file maps safetensors dtype names to llmcloud's tensor.DType, and knows the element
// size of the dtypes llmcloud cannot hold so that it can report them precisely.
package safetensors

import "github.com/llmcloud/llmcloud/tensor"

// supported lists the safetensors dtypes that map onto tensor.DType.
var supported = map[string]tensor.DType{
	"F32":  tensor.F32,
	"F16":  tensor.F16,
	"BF16": tensor.BF16,
	"I32":  tensor.I32,
	"U8":   tensor.U8,
}

// known lists every dtype name of the safetensors specification with its size in bits.
var known = map[string]int{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32,
	"I64": 64, "U64": 64, "F64": 64, "C64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// dtypeName is the safetensors name of a DType, or "" when safetensors cannot store it.
func dtypeName(t tensor.DType) string {
	for name, dt := range supported {
		if dt == t {
			return name
		}
	}
	return ""
}

// supportedNames is the human-readable list used in error messages.
const supportedNames = "F32, F16, BF16, I32, U8"
