package kernels

// gemm<T>Kernels[mr][nr] is the generated micro-kernel for an mr x nr tile (mr <= 3, nr <= 4)
// with weight rows of type T.
var gemmF32Kernels = [4][5]func(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int, acc int){
	1: {1: gemmF32_1x1, 2: gemmF32_1x2, 3: gemmF32_1x3, 4: gemmF32_1x4},
	2: {1: gemmF32_2x1, 2: gemmF32_2x2, 3: gemmF32_2x3, 4: gemmF32_2x4},
	3: {1: gemmF32_3x1, 2: gemmF32_3x2, 3: gemmF32_3x3, 4: gemmF32_3x4},
}

var gemmF16Kernels = [4][5]func(a *float32, lda int, b *uint16, ldb int, k int, c *float32, ldc int, acc int){
	1: {1: gemmF16_1x1, 2: gemmF16_1x2, 3: gemmF16_1x3, 4: gemmF16_1x4},
	2: {1: gemmF16_2x1, 2: gemmF16_2x2, 3: gemmF16_2x3, 4: gemmF16_2x4},
	3: {1: gemmF16_3x1, 2: gemmF16_3x2, 3: gemmF16_3x3, 4: gemmF16_3x4},
}

var gemmBF16Kernels = [4][5]func(a *float32, lda int, b *uint16, ldb int, k int, c *float32, ldc int, acc int){
	1: {1: gemmBF16_1x1, 2: gemmBF16_1x2, 3: gemmBF16_1x3, 4: gemmBF16_1x4},
	2: {1: gemmBF16_2x1, 2: gemmBF16_2x2, 3: gemmBF16_2x3, 4: gemmBF16_2x4},
	3: {1: gemmBF16_3x1, 2: gemmBF16_3x2, 3: gemmBF16_3x3, 4: gemmBF16_3x4},
}
