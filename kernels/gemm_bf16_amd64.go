package kernels

import "golang.org/x/sys/cpu"

// useBF16Asm selects the AVX-512 BF16 (VDPBF16PS) micro-kernel and converters of
// gemm_bf16_amd64.s for GemmBF16; useBF16AVX2 the AVX2+FMA fallback kernel (bf16 widened to
// f32 in registers).
var (
	useBF16Asm  = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BF16
	useBF16AVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

//go:noescape
func gemmBF16x8x32(kp int, a *uint32, b *uint32, c *float32, ldc int, acc int)

//go:noescape
func gemmBF16x4x16(kp int, a *uint32, b *uint32, c *float32, ldc int, acc int)

//go:noescape
func cvtPairsBF16(dst *uint32, src *float32, n int)

//go:noescape
func cvtInterleaveBF16(dst *uint32, s0, s1 *float32, n int)
