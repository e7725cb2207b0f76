// Hand-written AVX2 kernels of float_gemm_stream.go: the F16 GEMM micro-kernels over a packed
// activation tile (3 rows interleaved per 8 columns), the packing routines and a row
// prefetch. Every output is summed in gemmF16_3x4's order (8 lanes over k, then the same
// VHADDPS tree), so results match it bit for bit.

#include "textflag.h"

// FMA3(B) adds the products of the 3 activation vectors Y12-Y14 and the converted weight
// vector in Y15 to the accumulators of weight row B (Y(B), Y(B+4), Y(B+8)).
#define FMA3(b0, b1, b2) \
	VFMADD231PS Y12, Y15, b0; \
	VFMADD231PS Y13, Y15, b1; \
	VFMADD231PS Y14, Y15, b2

// LOADA(OA) loads the 3 activation vectors of one 8-column step at OA(AX).
#define LOADA(oa) \
	VMOVUPS oa(AX), Y12; \
	VMOVUPS oa+32(AX), Y13; \
	VMOVUPS oa+64(AX), Y14

// STEPPA: one 8-column step over 4 stored F16 rows (DX, DX+BX, DX+2BX, R8) at byte offset OB.
#define STEPPA(oa, ob) \
	LOADA(oa); \
	VCVTPH2PS ob(DX), Y15; \
	FMA3(Y0, Y4, Y8); \
	VCVTPH2PS ob(DX)(BX*1), Y15; \
	FMA3(Y1, Y5, Y9); \
	VCVTPH2PS ob(DX)(BX*2), Y15; \
	FMA3(Y2, Y6, Y10); \
	VCVTPH2PS ob(R8), Y15; \
	FMA3(Y3, Y7, Y11)

// STEPPP: one 8-column step over a packed group of 4 F16 rows (64 bytes at OB(DX)).
#define STEPPP(oa, ob) \
	LOADA(oa); \
	VCVTPH2PS ob(DX), Y15; \
	FMA3(Y0, Y4, Y8); \
	VCVTPH2PS ob+16(DX), Y15; \
	FMA3(Y1, Y5, Y9); \
	VCVTPH2PS ob+32(DX), Y15; \
	FMA3(Y2, Y6, Y10); \
	VCVTPH2PS ob+48(DX), Y15; \
	FMA3(Y3, Y7, Y11)

#define ZERO12 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

// HSUM4(A0..A3, T) reduces the accumulators of one activation row (hsum4's tree) into XT:
// [s(A0), s(A1), s(A2), s(A3)].
#define HSUM4(a0, a1, a2, a3, x0, xt) \
	VHADDPS      a1, a0, a0; \
	VHADDPS      a3, a2, a2; \
	VHADDPS      a2, a0, a0; \
	VEXTRACTF128 $0x01, a0, xt; \
	VADDPS       xt, x0, xt

// REDUCE3 reduces the 12 accumulators to X1, X5, X9 (rows 0, 1, 2 of the tile).
#define REDUCE3 \
	HSUM4(Y0, Y1, Y2, Y3, X0, X1); \
	HSUM4(Y4, Y5, Y6, Y7, X4, X5); \
	HSUM4(Y8, Y9, Y10, Y11, X8, X9)

// ADDC3 adds C rows AX, AX+CX, DX to X1, X5, X9; STOREC3 stores them there.
#define ADDC3 \
	VADDPS (AX), X1, X1; \
	VADDPS (AX)(CX*1), X5, X5; \
	VADDPS (DX), X9, X9

#define STOREC3 \
	VMOVUPS X1, (AX); \
	VMOVUPS X5, (AX)(CX*1); \
	VMOVUPS X9, (DX)

// func gemmF16PA3x4(a *float32, b *uint16, ldb int, k int, c *float32, ldc int, acc int)
TEXT ·gemmF16PA3x4(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), DX
	MOVQ ldb+16(FP), BX
	MOVQ k+24(FP), SI
	LEAQ (DX)(BX*2), R8
	ADDQ BX, R8
	ZERO12

pa_loop:
	CMPQ SI, $32
	JL   pa_tail
	STEPPA(0, 0)
	STEPPA(96, 16)
	STEPPA(192, 32)
	STEPPA(288, 48)
	ADDQ $384, AX
	ADDQ $64, DX
	ADDQ $64, R8
	SUBQ $32, SI
	JMP  pa_loop

pa_tail:
	CMPQ SI, $8
	JL   pa_reduce
	STEPPA(0, 0)
	ADDQ $96, AX
	ADDQ $16, DX
	ADDQ $16, R8
	SUBQ $8, SI
	JMP  pa_tail

pa_reduce:
	MOVQ  c+32(FP), AX
	MOVQ  ldc+40(FP), CX
	LEAQ  (AX)(CX*2), DX
	MOVQ  acc+48(FP), BX
	REDUCE3
	TESTQ BX, BX
	JZ    pa_store
	ADDC3

pa_store:
	STOREC3
	VZEROUPPER
	RET

// func gemmF16PP3x4(a *float32, b *uint16, k int, c *float32, ldc int, acc int)
TEXT ·gemmF16PP3x4(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), DX
	MOVQ k+16(FP), SI
	ZERO12

pp_loop:
	CMPQ SI, $32
	JL   pp_tail
	STEPPP(0, 0)
	STEPPP(96, 64)
	STEPPP(192, 128)
	STEPPP(288, 192)
	ADDQ $384, AX
	ADDQ $256, DX
	SUBQ $32, SI
	JMP  pp_loop

pp_tail:
	CMPQ SI, $8
	JL   pp_reduce
	STEPPP(0, 0)
	ADDQ $96, AX
	ADDQ $64, DX
	SUBQ $8, SI
	JMP  pp_tail

pp_reduce:
	MOVQ  c+24(FP), AX
	MOVQ  ldc+32(FP), CX
	LEAQ  (AX)(CX*2), DX
	MOVQ  acc+40(FP), BX
	REDUCE3
	TESTQ BX, BX
	JZ    pp_store
	ADDC3

pp_store:
	STOREC3
	VZEROUPPER
	RET

// func prefetchRows(p *byte, ld int, rows int, n int)
TEXT ·prefetchRows(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), AX
	MOVQ ld+8(FP), BX
	MOVQ rows+16(FP), CX
	MOVQ n+24(FP), DX

prefetchRows_row:
	TESTQ CX, CX
	JZ    prefetchRows_done
	MOVQ  AX, SI
	MOVQ  DX, DI

prefetchRows_line:
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	SUBQ       $64, DI
	JG         prefetchRows_line
	ADDQ       BX, AX
	DECQ       CX
	JMP        prefetchRows_row

prefetchRows_done:
	RET

// func packW4(dst *uint16, src *uint16, ld int, k int)
TEXT ·packW4(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), BX
	MOVQ k+24(FP), CX
	LEAQ (SI)(BX*2), R8
	LEAQ (R8)(BX*1), R9

packW4_loop:
	CMPQ    CX, $8
	JL      packW4_done
	VMOVDQU (SI), X0
	VMOVDQU (SI)(BX*1), X1
	VMOVDQU (R8), X2
	VMOVDQU (R9), X3
	VMOVDQU X0, (DI)
	VMOVDQU X1, 16(DI)
	VMOVDQU X2, 32(DI)
	VMOVDQU X3, 48(DI)
	ADDQ    $16, SI
	ADDQ    $16, R8
	ADDQ    $16, R9
	ADDQ    $64, DI
	SUBQ    $8, CX
	JMP     packW4_loop

packW4_done:
	RET

// func packA3(dst *float32, src *float32, ld int, k int)
TEXT ·packA3(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), BX
	MOVQ k+24(FP), CX
	LEAQ (SI)(BX*2), R8

packA3_loop:
	CMPQ    CX, $8
	JL      packA3_done
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (R8), Y2
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $96, DI
	SUBQ    $8, CX
	JMP     packA3_loop

packA3_done:
	VZEROUPPER
	RET

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
