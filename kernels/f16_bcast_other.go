//go:build !amd64

// This file stands in for the broadcast kernels of the F16 packs where there is no assembly
// (never called: PrepackF16 registers nothing without AVX2).
package kernels

func bcF16R6P1(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func bcF16R5P1(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func bcF16R4P1(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func bcF16R3P1(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func bcF16R2P1(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func bcF16R1P1(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func bcF16R2P2(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func bcF16R1P4(a *float32, lda int, b *uint16, kb int, ng int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func packPanel16(dst *uint16, src *uint16, ld int, kb int) { panic("no asm") }
