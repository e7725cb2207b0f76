//go:build !amd64

package kernels

// No assembly here: GemmBF16 runs its plain-Go path; the stubs are never called.
var useBF16Asm, useBF16AVX2, useAMXBF16 = false, false, false

func gemmBF16x8x32(kp int, a *uint32, b *uint32, c *float32, ldc int, acc int) { panic("no asm") }
func gemmBF16x4x16(kp int, a *uint32, b *uint32, c *float32, ldc int, acc int) { panic("no asm") }
func cvtPairsBF16(dst *uint32, src *float32, n int)                            { panic("no asm") }
func cvtInterleaveBF16(dst *uint32, s0, s1 *float32, n int)                    { panic("no asm") }
func gemmBF16AMX(cfg *byte, kp int, a *uint32, b *uint32, c *float32, ldc int, acc int, panels int) {
	panic("no asm")
}
