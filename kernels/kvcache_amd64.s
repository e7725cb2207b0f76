#include "textflag.h"

// func kvF16Load(dst *float32, src *byte, stride, hd, n int)
// n rows of hd (a multiple of 8) f16 values, rows stride bytes apart, widened into dst.
TEXT ·kvF16Load(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), R10
f16row:
	TESTQ R10, R10
	JZ    f16done
	MOVQ  SI, AX
	MOVQ  R9, CX
f16loop:
	VCVTPH2PS (AX), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, AX
	ADDQ      $32, DI
	SUBQ      $8, CX
	JNZ       f16loop
	ADDQ      R8, SI
	DECQ      R10
	JMP       f16row
f16done:
	VZEROUPPER
	RET

// func kvBF16Load(dst *float32, src *byte, stride, hd, n int)
TEXT ·kvBF16Load(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ hd+24(FP), R9
	MOVQ n+32(FP), R10
bf16row:
	TESTQ R10, R10
	JZ    bf16done
	MOVQ  SI, AX
	MOVQ  R9, CX
bf16loop:
	VPMOVZXWD (AX), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, AX
	ADDQ      $32, DI
	SUBQ      $8, CX
	JNZ       bf16loop
	ADDQ      R8, SI
	DECQ      R10
	JMP       bf16row
bf16done:
	VZEROUPPER
	RET

// func kvQ8Load(dst *float32, src, scales *byte, stride, hd, n int)
// n rows of hd (a multiple of 32) int8 values, each group of 32 times its f16 scale (scales:
// the first group's scale in the first row), rows stride bytes apart.
TEXT ·kvQ8Load(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ scales+16(FP), R11
	MOVQ stride+24(FP), R8
	MOVQ hd+32(FP), R9
	MOVQ n+40(FP), R10
q8row:
	TESTQ R10, R10
	JZ    q8done
	MOVQ  SI, AX
	MOVQ  R11, BX
	MOVQ  R9, CX
q8loop:
	MOVWLZX      (BX), DX
	VMOVD        DX, X1
	VCVTPH2PS    X1, X1
	VBROADCASTSS X1, Y1
	VPMOVSXBD    (AX), Y2
	VPMOVSXBD    8(AX), Y3
	VPMOVSXBD    16(AX), Y4
	VPMOVSXBD    24(AX), Y5
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VCVTDQ2PS    Y4, Y4
	VCVTDQ2PS    Y5, Y5
	VMULPS       Y1, Y2, Y2
	VMULPS       Y1, Y3, Y3
	VMULPS       Y1, Y4, Y4
	VMULPS       Y1, Y5, Y5
	VMOVUPS      Y2, (DI)
	VMOVUPS      Y3, 32(DI)
	VMOVUPS      Y4, 64(DI)
	VMOVUPS      Y5, 96(DI)
	ADDQ         $32, AX
	ADDQ         $2, BX
	ADDQ         $128, DI
	SUBQ         $32, CX
	JNZ          q8loop
	ADDQ         R8, SI
	ADDQ         R8, R11
	DECQ         R10
	JMP          q8row
q8done:
	VZEROUPPER
	RET

#define FP8X8(off) \
	VPMOVZXBD off(AX), Y2 \
	VPAND     Y6, Y2, Y3  \
	VPAND     Y7, Y2, Y2  \
	VPSLLD    $24, Y3, Y3 \
	VPSLLD    $20, Y2, Y2 \
	VPOR      Y3, Y2, Y2  \
	VMULPS    Y8, Y2, Y2  \
	VMULPS    Y1, Y2, Y2  \
	VMOVUPS   Y2, (off*4)(DI)

// func kvFP8Load(dst *float32, src, scales *byte, stride, hd, n int)
// kvQ8Load for e4m3 values: a code's bits placed in a float32 (sign to bit 31, exponent and
// mantissa to bits 20..26) times 2^120 is its value, subnormals included.
TEXT ·kvFP8Load(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ scales+16(FP), R11
	MOVQ stride+24(FP), R8
	MOVQ hd+32(FP), R9
	MOVQ n+40(FP), R10
	MOVL         $0x80, DX
	VMOVD        DX, X6
	VPBROADCASTD X6, Y6
	MOVL         $0x7f, DX
	VMOVD        DX, X7
	VPBROADCASTD X7, Y7
	MOVL         $0x7B800000, DX
	VMOVD        DX, X8
	VPBROADCASTD X8, Y8
fp8row:
	TESTQ R10, R10
	JZ    fp8done
	MOVQ  SI, AX
	MOVQ  R11, BX
	MOVQ  R9, CX
fp8loop:
	MOVWLZX      (BX), DX
	VMOVD        DX, X1
	VCVTPH2PS    X1, X1
	VBROADCASTSS X1, Y1
	FP8X8(0)
	FP8X8(8)
	FP8X8(16)
	FP8X8(24)
	ADDQ         $32, AX
	ADDQ         $2, BX
	ADDQ         $128, DI
	SUBQ         $32, CX
	JNZ          fp8loop
	ADDQ         R8, SI
	ADDQ         R8, R11
	DECQ         R10
	JMP          fp8row
fp8done:
	VZEROUPPER
	RET
