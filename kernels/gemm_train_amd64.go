package kernels

import "golang.org/x/sys/cpu"

// useTrainAsm selects the AVX2+FMA micro-kernel of gemm_train_amd64.s for Gemm and PeakFLOPS.
var useTrainAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA
