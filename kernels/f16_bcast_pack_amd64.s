// Hand-written AVX transposition for the F16 panel packs (f16_bcast.go): 16 F16 rows x 8
// columns at a time become 8 columns of 16 values, two 8x8 word transposes by unpacks.

#include "textflag.h"

// HALF transposes rows A, A+ld, A+2ld, A+3ld, B, B+ld, B+2ld, B+3ld (ld = BX, R12 = 3ld), 8
// words each, and stores word c of the 8 rows at OFF+32c(DI).
#define HALF(a, b, off) \
	VMOVDQU (a), X0; \
	VMOVDQU (a)(BX*1), X1; \
	VMOVDQU (a)(BX*2), X2; \
	VMOVDQU (a)(R12*1), X3; \
	VMOVDQU (b), X4; \
	VMOVDQU (b)(BX*1), X5; \
	VMOVDQU (b)(BX*2), X6; \
	VMOVDQU (b)(R12*1), X7; \
	VPUNPCKLWD X1, X0, X8; \
	VPUNPCKHWD X1, X0, X9; \
	VPUNPCKLWD X3, X2, X10; \
	VPUNPCKHWD X3, X2, X11; \
	VPUNPCKLWD X5, X4, X12; \
	VPUNPCKHWD X5, X4, X13; \
	VPUNPCKLWD X7, X6, X14; \
	VPUNPCKHWD X7, X6, X15; \
	VPUNPCKLDQ X10, X8, X0; \
	VPUNPCKHDQ X10, X8, X1; \
	VPUNPCKLDQ X11, X9, X2; \
	VPUNPCKHDQ X11, X9, X3; \
	VPUNPCKLDQ X14, X12, X4; \
	VPUNPCKHDQ X14, X12, X5; \
	VPUNPCKLDQ X15, X13, X6; \
	VPUNPCKHDQ X15, X13, X7; \
	VPUNPCKLQDQ X4, X0, X8; \
	VPUNPCKHQDQ X4, X0, X9; \
	VPUNPCKLQDQ X5, X1, X10; \
	VPUNPCKHQDQ X5, X1, X11; \
	VPUNPCKLQDQ X6, X2, X12; \
	VPUNPCKHQDQ X6, X2, X13; \
	VPUNPCKLQDQ X7, X3, X14; \
	VPUNPCKHQDQ X7, X3, X15; \
	VMOVDQU X8, off(DI); \
	VMOVDQU X9, off+32(DI); \
	VMOVDQU X10, off+64(DI); \
	VMOVDQU X11, off+96(DI); \
	VMOVDQU X12, off+128(DI); \
	VMOVDQU X13, off+160(DI); \
	VMOVDQU X14, off+192(DI); \
	VMOVDQU X15, off+224(DI)

// func packPanel16(dst *uint16, src *uint16, ld int, kb int)
TEXT ·packPanel16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), BX
	MOVQ kb+24(FP), CX
	LEAQ (BX)(BX*2), R12
	LEAQ (SI)(BX*4), R8
	LEAQ (SI)(BX*8), R9
	LEAQ (R9)(BX*4), R10

pp16_loop:
	CMPQ CX, $8
	JL   pp16_done
	HALF(SI, R8, 0)
	HALF(R9, R10, 16)
	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	ADDQ $256, DI
	SUBQ $8, CX
	JMP  pp16_loop

pp16_done:
	RET
