// Hand-written AVX2 kernels of float_gemm_stream.go: the F16 GEMM micro-kernels over a packed
// activation tile (3 rows interleaved per 8 columns), the packing routines and a row
// prefetch. Every output is summed in gemmF16_3x4's order (8 lanes over k, then the same
// VHADDPS tree), so results match it bit for bit.

#include "textflag.h"
#include "f16_gemm_amd64.h"

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
