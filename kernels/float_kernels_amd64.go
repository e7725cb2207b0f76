// This file lists the generated GEMM micro-kernels of float_amd64.s by tile shape.
package kernels

// gemm<T>Kernels[mr][nr] is the generated micro-kernel for an mr x nr tile (mr <= 3, nr <= 4)
// with weight rows of type T.
var gemmF32Kernels = [5][7]gemmF32Fn{
	1: {1: gemmF32_1x1, 2: gemmF32_1x2, 3: gemmF32_1x3, 4: gemmF32_1x4},
	2: {1: gemmF32_2x1, 2: gemmF32_2x2, 3: gemmF32_2x3, 4: gemmF32_2x4},
	3: {1: gemmF32_3x1, 2: gemmF32_3x2, 3: gemmF32_3x3, 4: gemmF32_3x4},
}

var gemmF16Kernels = [5][7]gemmU16Fn{
	1: {1: gemmF16_1x1, 2: gemmF16_1x2, 3: gemmF16_1x3, 4: gemmF16_1x4},
	2: {1: gemmF16_2x1, 2: gemmF16_2x2, 3: gemmF16_2x3, 4: gemmF16_2x4},
	3: {1: gemmF16_3x1, 2: gemmF16_3x2, 3: gemmF16_3x3, 4: gemmF16_3x4},
}

var gemmBF16Kernels = [5][7]gemmU16Fn{
	1: {1: gemmBF16_1x1, 2: gemmBF16_1x2, 3: gemmBF16_1x3, 4: gemmBF16_1x4},
	2: {1: gemmBF16_2x1, 2: gemmBF16_2x2, 3: gemmBF16_2x3, 4: gemmBF16_2x4},
	3: {1: gemmBF16_3x1, 2: gemmBF16_3x2, 3: gemmBF16_3x3, 4: gemmBF16_3x4},
}

// gemmZ<T>Kernels[mr][nr] is the AVX-512 micro-kernel for an mr x nr tile (mr <= 4, nr <= 6).
var gemmZF32Kernels = [5][7]gemmF32Fn{
	1: {1: gemmZF32_1x1, 2: gemmZF32_1x2, 3: gemmZF32_1x3, 4: gemmZF32_1x4, 5: gemmZF32_1x5, 6: gemmZF32_1x6},
	2: {1: gemmZF32_2x1, 2: gemmZF32_2x2, 3: gemmZF32_2x3, 4: gemmZF32_2x4, 5: gemmZF32_2x5, 6: gemmZF32_2x6},
	3: {1: gemmZF32_3x1, 2: gemmZF32_3x2, 3: gemmZF32_3x3, 4: gemmZF32_3x4, 5: gemmZF32_3x5, 6: gemmZF32_3x6},
	4: {1: gemmZF32_4x1, 2: gemmZF32_4x2, 3: gemmZF32_4x3, 4: gemmZF32_4x4, 5: gemmZF32_4x5, 6: gemmZF32_4x6},
}

var gemmZF16Kernels = [5][7]gemmU16Fn{
	1: {1: gemmZF16_1x1, 2: gemmZF16_1x2, 3: gemmZF16_1x3, 4: gemmZF16_1x4, 5: gemmZF16_1x5, 6: gemmZF16_1x6},
	2: {1: gemmZF16_2x1, 2: gemmZF16_2x2, 3: gemmZF16_2x3, 4: gemmZF16_2x4, 5: gemmZF16_2x5, 6: gemmZF16_2x6},
	3: {1: gemmZF16_3x1, 2: gemmZF16_3x2, 3: gemmZF16_3x3, 4: gemmZF16_3x4, 5: gemmZF16_3x5, 6: gemmZF16_3x6},
	4: {1: gemmZF16_4x1, 2: gemmZF16_4x2, 3: gemmZF16_4x3, 4: gemmZF16_4x4, 5: gemmZF16_4x5, 6: gemmZF16_4x6},
}

var gemmZBF16Kernels = [5][7]gemmU16Fn{
	1: {1: gemmZBF16_1x1, 2: gemmZBF16_1x2, 3: gemmZBF16_1x3, 4: gemmZBF16_1x4, 5: gemmZBF16_1x5, 6: gemmZBF16_1x6},
	2: {1: gemmZBF16_2x1, 2: gemmZBF16_2x2, 3: gemmZBF16_2x3, 4: gemmZBF16_2x4, 5: gemmZBF16_2x5, 6: gemmZBF16_2x6},
	3: {1: gemmZBF16_3x1, 2: gemmZBF16_3x2, 3: gemmZBF16_3x3, 4: gemmZBF16_3x4, 5: gemmZBF16_3x5, 6: gemmZBF16_3x6},
	4: {1: gemmZBF16_4x1, 2: gemmZBF16_4x2, 3: gemmZBF16_4x3, 4: gemmZBF16_4x4, 5: gemmZBF16_4x5, 6: gemmZBF16_4x6},
}

// attnPVZKernels[rows] is the AVX-512 P·V kernel for rows <= 6 output rows of 64 columns.
var attnPVZKernels = [7]attnPVFn{1: attnPVZ_1, 2: attnPVZ_2, 3: attnPVZ_3, 4: attnPVZ_4, 5: attnPVZ_5, 6: attnPVZ_6}
