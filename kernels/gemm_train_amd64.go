package kernels

import "golang.org/x/sys/cpu"

// useTrainAsm selects the AVX2+FMA micro-kernel of gemm_train_amd64.s for Gemm and PeakFLOPS;
// useTrainAVX512 the AVX-512 one.
var (
	useTrainAsm    = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useTrainAVX512 = useTrainAsm && cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ
)
