//go:build !amd64

package kernels

func gemmF16PA3x4(a *float32, b *uint16, ldb int, k int, c *float32, ldc int, acc int) {
	panic("no asm")
}

func gemmF16PP3x4(a *float32, b *uint16, k int, c *float32, ldc int, acc int) { panic("no asm") }

func prefetchRows(p *byte, ld int, rows int, n int) {}

func packW4(dst *uint16, src *uint16, ld int, k int)   { panic("no asm") }
func packA3(dst *float32, src *float32, ld int, k int) { panic("no asm") }
