package kernels

// gemmKernels[mr][nr] is the generated micro-kernel for an mr x nr tile (mr <= 3, nr <= 4).
var gemmKernels = [4][5]func(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int, acc int){
	1: {1: gemmKernel1x1, 2: gemmKernel1x2, 3: gemmKernel1x3, 4: gemmKernel1x4},
	2: {1: gemmKernel2x1, 2: gemmKernel2x2, 3: gemmKernel2x3, 4: gemmKernel2x4},
	3: {1: gemmKernel3x1, 2: gemmKernel3x2, 3: gemmKernel3x3, 4: gemmKernel3x4},
}
