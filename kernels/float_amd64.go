package kernels

import "golang.org/x/sys/cpu"

// useFloatAsm selects the AVX2+FMA+F16C assembly in float_amd64.s.
var useFloatAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C
