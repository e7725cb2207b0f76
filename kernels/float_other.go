//go:build !amd64

package kernels

// useFloatAsm is false where no assembly exists; the stubs below are never called.
var useFloatAsm = false

// useAVX512 is false where no assembly exists.
var useAVX512 = false

// useF16x8 is false where no assembly exists.
var useF16x8 = false

// hasF16x8 is false where no assembly exists.
const hasF16x8 = false

func gemvF32x4(w *float32, ldw int, x *float32, k int, out *float32) { panic("no asm") }
func gemvF16x4(w *uint16, ldw int, x *float32, k int, out *float32)  { panic("no asm") }
func gemvF16x8(w *uint16, ldw int, x *float32, k int, out *float32)  { panic("no asm") }
func gemvBF16x4(w *uint16, ldw int, x *float32, k int, out *float32) { panic("no asm") }
func cvtF16(dst *float32, src *uint16, n int)                        { panic("no asm") }
func cvtBF16(dst *float32, src *uint16, n int)                       { panic("no asm") }
func roundF16(dst, src *float32, n int)                              { panic("no asm") }
func dotF32(a, b *float32, n int) float32                            { panic("no asm") }
func axpyF32(y *float32, a float32, x *float32, n int)               { panic("no asm") }
func scaleF32(x *float32, a float32, n int)                          { panic("no asm") }
func sumSqF64(x *float32, n int) float64                             { panic("no asm") }
func mulScaleF32(out, x, w *float32, s float32, n int)               { panic("no asm") }
func addF32(dst, src *float32, n int)                                { panic("no asm") }
func maxF32(x *float32, n int) float32                               { panic("no asm") }
func expSubF32(x *float32, mx float32, n int) float32                { panic("no asm") }
func swigluF32(out, a, b *float32, n int)                            { panic("no asm") }

var (
	gemmF32Kernels, gemmZF32Kernels   [5][7]gemmF32Fn
	gemmF16Kernels, gemmBF16Kernels   [5][7]gemmU16Fn
	gemmZF16Kernels, gemmZBF16Kernels [5][7]gemmU16Fn
	attnPVZKernels                    [7]attnPVFn
)

func gemvF32rows(w *float32, ldw int, x *float32, k int, out *float32, rows int) { panic("no asm") }
func gemvF16rows(w *uint16, ldw int, x *float32, k int, out *float32, rows int)  { panic("no asm") }
func gemvBF16rows(w *uint16, ldw int, x *float32, k int, out *float32, rows int) { panic("no asm") }
