package kernels

import "golang.org/x/sys/cpu"

// attnAsm selects the AVX2+FMA attention kernels of attention_amd64.s.
var attnAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func attnScores4(q, k *float32, stride, hd, nb int, scale float32, out *float32)

//go:noescape
func attnPV(out, p, v *float32, stride, hd, nb int)
