package kernels

import (
	"os"

	"golang.org/x/sys/cpu"
)

// useAMXBF16 selects the AMX-BF16 micro-kernel (gemm_bf16_amx_amd64.s) for GemmBF16: the CPU
// has AMX tiles with the bf16 dot product, the AVX-512 BF16 converters the packing uses, and the
// kernel gave this process the tile data state (amxPermit). LLMCLOUD_NO_AMX=1 turns it off
// (to compare with the AVX-512 kernel on the same machine).
var useAMXBF16 = cpu.X86.HasAMXTile && cpu.X86.HasAMXBF16 && useBF16Asm && amxAllowed

// useAMXInt8 selects the AMX-INT8 tile of the Q8_0 / Q4_0 prefill GEMMs (quant_amx.go): the
// CPU has AMX tiles with the int8 dot products and AVX-512 (BW) for the epilogue, and AMX is
// allowed (amxAllowed). Tests switch it off to run the VNNI paths.
var useAMXInt8 = cpu.X86.HasAMXTile && cpu.X86.HasAMXInt8 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && amxAllowed

// amxAllowed: the CPU has AMX tiles, LLMCLOUD_NO_AMX is unset (one switch turns every AMX path off, to compare with
// the AVX-512 kernels on the same machine) and the kernel gave this process the tile data
// state (amxPermit).
var amxAllowed = cpu.X86.HasAMXTile && os.Getenv("LLMCLOUD_NO_AMX") == "" && amxPermit()

// gemmBF16AMX computes panels 32x32 tiles of C (gemm_bf16_amx_amd64.s): for each 32-row panel
// p, C[32p+r][j] (+)= Σ_{q<kp} pair products, with A's row 32p+r at a[(32p+r)·kp:] (kp pairs,
// kp a multiple of 16), B's pair row q at b[32q:], C's row i at c + i·ldc bytes.
//
//go:noescape
func gemmBF16AMX(cfg *byte, kp int, a *uint32, b *uint32, c *float32, ldc int, acc int, panels int)
