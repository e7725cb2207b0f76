package kernels

import "golang.org/x/sys/cpu"

// attnAsm selects the AVX2+FMA attention kernel of attention_amd64.s (attnPV; scores use the
// float GEMM micro-kernels).
var attnAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func attnPV(out, p, v *float32, stride, hd, nb int)
