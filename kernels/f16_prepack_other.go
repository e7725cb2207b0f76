//go:build !amd64

// This file stands in for the packed-weight F16 kernels where there is no assembly (never
// called: PrepackF16 registers nothing without AVX2).
package kernels

func gemmF16PP3xG(a *float32, b *uint16, k int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func gemmF16PP2xG(a *float32, b *uint16, k int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func gemmF16PP1xG(a *float32, b *uint16, k int, ng int, c *float32, acc int) { panic("no asm") }
