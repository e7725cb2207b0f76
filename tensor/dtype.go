// Package tensor holds the element types llmcloud knows (float and block-quantized), their
// byte layouts, and the Tensor value that the file formats produce and the model consumes.
//
// Layout convention used everywhere in llmcloud: Shape is row-major, outermost dimension first
// (PyTorch order). A linear weight is [out, in]; its last dimension is contiguous in Data, and
// quantization blocks run along that last dimension. GGUF stores dimensions innermost first
// (ggml's ne[]), so the GGUF reader reverses them.
package tensor

import "fmt"

// DType is an element type. Values are llmcloud's own; GGMLType maps to GGUF's type ids.
type DType int

const (
	F32 DType = iota
	F16
	BF16
	Q8_0
	Q4_0
	Q4_K
	Q6_K
	I32   // 32-bit integers (e.g. safetensors position ids); not a weight type
	MXFP4 // OCP microscaling FP4 (gpt-oss experts; mxfp4.go): read and multiplied, not written by quantization
	U8    // bytes (safetensors U8: gpt-oss's MXFP4 _blocks and _scales); not a weight type, no GGUF type
	W8A8  // int8 weights with one float32 scale per row (w8a8.go): made at load by --w8a8, no GGUF type
	Q4_0Z // Q4_0 rows plus per-group zero corrections (Tensor.Zero; HF AWQ/GPTQ 4-bit, groupzero.go); no GGUF type
	Q8_0Z // Q8_0 rows plus per-group zero corrections (Tensor.Zero; HF GPTQ 8-bit, groupzero.go); no GGUF type
	nDTypes
)

type dtypeInfo struct {
	name       string
	ggml       uint32 // GGUF/ggml type id
	blockElems int    // elements per block (1 for plain types)
	blockBytes int    // bytes per block
}

// Block layouts (llama.cpp ggml-common.h):
//
//	Q8_0: 32 elems  = f16 d + 32 x int8                         = 34 bytes
//	Q4_0: 32 elems  = f16 d + 16 bytes of nibbles               = 18 bytes
//	Q4_K: 256 elems = f16 d + f16 dmin + 12 bytes scales + 128  = 144 bytes
//	Q6_K: 256 elems = 128 ql + 64 qh + 16 int8 scales + f16 d   = 210 bytes
//	MXFP4: 32 elems = E8M0 scale byte + 16 bytes of E2M1 nibbles = 17 bytes (ggml type 39)
var dtypes = [nDTypes]dtypeInfo{
	F32:   {"F32", 0, 1, 4},
	F16:   {"F16", 1, 1, 2},
	BF16:  {"BF16", 30, 1, 2},
	Q8_0:  {"Q8_0", 8, 32, 34},
	Q4_0:  {"Q4_0", 2, 32, 18},
	Q4_K:  {"Q4_K", 12, 256, 144},
	Q6_K:  {"Q6_K", 14, 256, 210},
	I32:   {"I32", 26, 1, 4},
	MXFP4: {"MXFP4", 39, 32, 17},
	U8:    {"U8", noGGML, 1, 1},
	W8A8:  {"W8A8", noGGML, 1, 1}, // a row is k int8 values + 4 bytes of scale: see RowBytes
	Q4_0Z: {"Q4_0Z", noGGML, 32, 18},
	Q8_0Z: {"Q8_0Z", noGGML, 32, 34},
}

// noGGML is the type id of a DType GGUF has none for (U8): no ggml type uses it.
const noGGML = 1 << 31

func (t DType) valid() bool { return t >= 0 && t < nDTypes }

// Valid reports whether t is one of the types above.
func (t DType) Valid() bool { return t.valid() }

// String returns the upper-case name used by llama.cpp ("F32", "Q4_K", ...).
func (t DType) String() string {
	if !t.valid() {
		return fmt.Sprintf("DType(%d)", int(t))
	}
	return dtypes[t].name
}

// BlockElems is the number of elements in one block (1 for F32/F16/BF16/I32).
func (t DType) BlockElems() int { return dtypes[t].blockElems }

// BlockBytes is the number of bytes in one block.
func (t DType) BlockBytes() int { return dtypes[t].blockBytes }

// Quantized reports whether t is a block-quantized type.
func (t DType) Quantized() bool { return t.valid() && dtypes[t].blockElems > 1 }

// GGMLType is the type id GGUF files use for t.
func (t DType) GGMLType() uint32 { return dtypes[t].ggml }

// RowBytes is the size in bytes of n consecutive elements; n must be a multiple of BlockElems.
func (t DType) RowBytes(n int) (int, error) {
	if !t.valid() {
		return 0, fmt.Errorf("unknown dtype %d", int(t))
	}
	if t == W8A8 {
		return n + 4, nil
	}
	be := dtypes[t].blockElems
	if n%be != 0 {
		return 0, fmt.Errorf("%s: row of %d elements is not a multiple of the block size %d", t, n, be)
	}
	return n / be * dtypes[t].blockBytes, nil
}

// FromGGML maps a GGUF type id to a DType.
func FromGGML(id uint32) (DType, bool) {
	for t := DType(0); t < nDTypes; t++ {
		if dtypes[t].ggml == id {
			return t, true
		}
	}
	return 0, false
}

// Parse maps a name such as "f16", "Q8_0" or "q4_k" to a DType.
func Parse(name string) (DType, error) {
	for t := DType(0); t < nDTypes; t++ {
		if equalFold(dtypes[t].name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q", name)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
