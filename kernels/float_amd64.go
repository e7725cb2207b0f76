package kernels

import "golang.org/x/sys/cpu"

// useFloatAsm selects the AVX2+FMA+F16C assembly in float_amd64.s.
var useFloatAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// useAVX512 selects the AVX-512 GEMM micro-kernels (float_gemm512.go) for matmuls of two or
// more rows; x/sys/cpu reports AVX-512 only when the OS saves the ZMM state.
var useAVX512 = useFloatAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
