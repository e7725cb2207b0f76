// This file declares the packed-weight F16 kernels of f16_prepack_amd64.s.
package kernels

// gemmF16PP3xG runs gemmF16PP3x4 over ng consecutive packed groups of 4 weight rows (group j
// at b + j*8*k bytes), storing group j's outputs at c + 4*j floats: one call per activation
// tile and weight block instead of one per group (same sums, same bits).
//
//go:noescape
func gemmF16PP3xG(a *float32, b *uint16, k int, ng int, c *float32, ldc int, acc int)

// gemmF16PP2xG and gemmF16PP1xG are gemmF16PP3xG for the first 2 or 1 rows of the activation
// tile (the last tile of m % 3 rows), each output summed as gemmF16PP3x4 sums it.
//
//go:noescape
func gemmF16PP2xG(a *float32, b *uint16, k int, ng int, c *float32, ldc int, acc int)

//go:noescape
func gemmF16PP1xG(a *float32, b *uint16, k int, ng int, c *float32, acc int)
