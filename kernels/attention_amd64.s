#include "textflag.h"

// func attnPV(out, p, v *float32, stride, hd, nb int)
// out[0:hd] += sum_i p[i] * v[i*stride : i*stride+hd] for i < nb; hd a multiple of 8.
// Columns are done 64 (8 registers) at a time, then 32 (4), then 8 at a time; out stays in
// registers across all nb rows.
TEXT ·attnPV(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DX
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), DI
	MOVQ stride+24(FP), R8
	SHLQ $2, R8
	MOVQ hd+32(FP), R9
	MOVQ nb+40(FP), R10
	TESTQ R10, R10
	JZ   pdone

p64:
	CMPQ R9, $64
	JLT  p32
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7
	MOVQ    DI, AX
	XORQ    CX, CX

p64row:
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (AX), Y8, Y0
	VFMADD231PS  32(AX), Y8, Y1
	VFMADD231PS  64(AX), Y8, Y2
	VFMADD231PS  96(AX), Y8, Y3
	VFMADD231PS  128(AX), Y8, Y4
	VFMADD231PS  160(AX), Y8, Y5
	VFMADD231PS  192(AX), Y8, Y6
	VFMADD231PS  224(AX), Y8, Y7
	ADDQ         R8, AX
	INCQ         CX
	CMPQ         CX, R10
	JLT          p64row

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	ADDQ    $256, DX
	ADDQ    $256, DI
	SUBQ    $64, R9
	JMP     p64

// 32 columns in four registers: four independent FMA chains where the 8-column loop has one
// (head dim 32, the default model's); each column is the same chain over the rows.
p32:
	CMPQ R9, $32
	JLT  p8
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	MOVQ    DI, AX
	XORQ    CX, CX

p32row:
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (AX), Y8, Y0
	VFMADD231PS  32(AX), Y8, Y1
	VFMADD231PS  64(AX), Y8, Y2
	VFMADD231PS  96(AX), Y8, Y3
	ADDQ         R8, AX
	INCQ         CX
	CMPQ         CX, R10
	JLT          p32row

	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, R9
	JMP     p32

p8:
	CMPQ R9, $8
	JLT  pdone
	VMOVUPS (DX), Y0
	MOVQ    DI, AX
	XORQ    CX, CX

p8row:
	VBROADCASTSS (SI)(CX*4), Y8
	VFMADD231PS  (AX), Y8, Y0
	ADDQ         R8, AX
	INCQ         CX
	CMPQ         CX, R10
	JLT          p8row

	VMOVUPS Y0, (DX)
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, R9
	JMP     p8

pdone:
	VZEROUPPER
	RET
