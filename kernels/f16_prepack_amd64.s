// Hand-written AVX2 kernels of f16_prepack.go: an activation tile of 3, 2 or 1 rows run over
// consecutive packed groups of 4 F16 weight rows in one call, each output summed as
// gemmF16PP3x4 sums it (so results match gemmF16_3x4 bit for bit).

#include "textflag.h"
#include "f16_gemm_amd64.h"

// func gemmF16PP3xG(a *float32, b *uint16, k int, ng int, c *float32, ldc int, acc int)
TEXT ·gemmF16PP3xG(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), R10
	MOVQ b+8(FP), DX
	MOVQ k+16(FP), R11
	MOVQ ng+24(FP), R9
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), CX
	MOVQ acc+48(FP), BX

ppg_group:
	TESTQ R9, R9
	JZ    ppg_done
	MOVQ  R10, AX
	MOVQ  R11, SI
	ZERO12

ppg_loop:
	CMPQ SI, $32
	JL   ppg_tail
	STEPPP(0, 0)
	STEPPP(96, 64)
	STEPPP(192, 128)
	STEPPP(288, 192)
	ADDQ $384, AX
	ADDQ $256, DX
	SUBQ $32, SI
	JMP  ppg_loop

ppg_tail:
	CMPQ SI, $8
	JL   ppg_reduce
	STEPPP(0, 0)
	ADDQ $96, AX
	ADDQ $64, DX
	SUBQ $8, SI
	JMP  ppg_tail

ppg_reduce:
	LEAQ  (DI)(CX*2), R8
	REDUCE3
	TESTQ BX, BX
	JZ    ppg_store
	VADDPS (DI), X1, X1
	VADDPS (DI)(CX*1), X5, X5
	VADDPS (R8), X9, X9

ppg_store:
	VMOVUPS X1, (DI)
	VMOVUPS X5, (DI)(CX*1)
	VMOVUPS X9, (R8)
	ADDQ    $16, DI
	DECQ    R9
	JMP     ppg_group

ppg_done:
	VZEROUPPER
	RET

// STEPPP1 / STEPPP2: STEPPP for a tile's first 1 or 2 activation rows (accumulators Y0-Y3,
// and Y4-Y7 for the second row), the same FMAs per accumulator as STEPPP.
#define STEPPP1(oa, ob) \
	VMOVUPS     oa(AX), Y12; \
	VCVTPH2PS   ob(DX), Y15; \
	VFMADD231PS Y12, Y15, Y0; \
	VCVTPH2PS   ob+16(DX), Y15; \
	VFMADD231PS Y12, Y15, Y1; \
	VCVTPH2PS   ob+32(DX), Y15; \
	VFMADD231PS Y12, Y15, Y2; \
	VCVTPH2PS   ob+48(DX), Y15; \
	VFMADD231PS Y12, Y15, Y3

#define STEPPP2(oa, ob) \
	VMOVUPS     oa(AX), Y12; \
	VMOVUPS     oa+32(AX), Y13; \
	VCVTPH2PS   ob(DX), Y15; \
	VFMADD231PS Y12, Y15, Y0; \
	VFMADD231PS Y13, Y15, Y4; \
	VCVTPH2PS   ob+16(DX), Y15; \
	VFMADD231PS Y12, Y15, Y1; \
	VFMADD231PS Y13, Y15, Y5; \
	VCVTPH2PS   ob+32(DX), Y15; \
	VFMADD231PS Y12, Y15, Y2; \
	VFMADD231PS Y13, Y15, Y6; \
	VCVTPH2PS   ob+48(DX), Y15; \
	VFMADD231PS Y12, Y15, Y3; \
	VFMADD231PS Y13, Y15, Y7

// func gemmF16PP2xG(a *float32, b *uint16, k int, ng int, c *float32, ldc int, acc int)
TEXT ·gemmF16PP2xG(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), R10
	MOVQ b+8(FP), DX
	MOVQ k+16(FP), R11
	MOVQ ng+24(FP), R9
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), CX
	MOVQ acc+48(FP), BX

pp2_group:
	TESTQ R9, R9
	JZ    pp2_done
	MOVQ  R10, AX
	MOVQ  R11, SI
	ZERO12

pp2_loop:
	CMPQ SI, $8
	JL   pp2_reduce
	STEPPP2(0, 0)
	ADDQ $96, AX
	ADDQ $64, DX
	SUBQ $8, SI
	JMP  pp2_loop

pp2_reduce:
	HSUM4(Y0, Y1, Y2, Y3, X0, X1)
	HSUM4(Y4, Y5, Y6, Y7, X4, X5)
	TESTQ BX, BX
	JZ    pp2_store
	VADDPS (DI), X1, X1
	VADDPS (DI)(CX*1), X5, X5

pp2_store:
	VMOVUPS X1, (DI)
	VMOVUPS X5, (DI)(CX*1)
	ADDQ    $16, DI
	DECQ    R9
	JMP     pp2_group

pp2_done:
	VZEROUPPER
	RET

// func gemmF16PP1xG(a *float32, b *uint16, k int, ng int, c *float32, acc int)
TEXT ·gemmF16PP1xG(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), R10
	MOVQ b+8(FP), DX
	MOVQ k+16(FP), R11
	MOVQ ng+24(FP), R9
	MOVQ c+32(FP), DI
	MOVQ acc+40(FP), BX

pp1_group:
	TESTQ R9, R9
	JZ    pp1_done
	MOVQ  R10, AX
	MOVQ  R11, SI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

pp1_loop:
	CMPQ SI, $8
	JL   pp1_reduce
	STEPPP1(0, 0)
	ADDQ $96, AX
	ADDQ $64, DX
	SUBQ $8, SI
	JMP  pp1_loop

pp1_reduce:
	HSUM4(Y0, Y1, Y2, Y3, X0, X1)
	TESTQ BX, BX
	JZ    pp1_store
	VADDPS (DI), X1, X1

pp1_store:
	VMOVUPS X1, (DI)
	ADDQ    $16, DI
	DECQ    R9
	JMP     pp1_group

pp1_done:
	VZEROUPPER
	RET
