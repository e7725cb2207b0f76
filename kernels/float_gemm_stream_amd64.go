// This file declares the packed-activation F16 micro-kernel of float_gemm_stream_amd64.s.
package kernels

// gemmF16PA3x4 sets (or, with acc != 0, adds to) C[i*ldc/4+j] the dot product of activation
// row i and F16 weight row j (at b + j*ldb bytes) over k (a multiple of 8) for i < 3, j < 4.
// The activations are packed: for each 8 columns, the 8 values of row 0, then row 1, then
// row 2 (96 bytes). Each output is summed in the same order as gemmF16_3x4's.
//
//go:noescape
func gemmF16PA3x4(a *float32, b *uint16, ldb int, k int, c *float32, ldc int, acc int)

// gemmF16PP3x4 is gemmF16PA3x4 with packed weights too: for each 8 columns, the 8 F16 values
// of weight row 0, 1, 2 and 3 (64 bytes).
//
//go:noescape
func gemmF16PP3x4(a *float32, b *uint16, k int, c *float32, ldc int, acc int)

// prefetchRows prefetches (PREFETCHT0) the n bytes from p of each of rows rows, ld bytes apart.
//
//go:noescape
func prefetchRows(p *byte, ld int, rows int, n int)

// packW4 writes k (a multiple of 8) columns of the 4 F16 rows at src (ld bytes apart) to dst
// interleaved: for each 8 columns, the 8 values of row 0, 1, 2 and 3.
//
//go:noescape
func packW4(dst *uint16, src *uint16, ld int, k int)

// packA3 writes k (a multiple of 8) columns of the 3 f32 rows at src (ld bytes apart) to dst
// interleaved: for each 8 columns, the 8 values of row 0, 1 and 2.
//
//go:noescape
func packA3(dst *float32, src *float32, ld int, k int)
