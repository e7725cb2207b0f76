// AMX-INT8 tile of the Q8_0 / Q4_0 prefill GEMM (quant_amx.go). As in gemm_bf16_amx_amd64.s
// the tile instructions are written as their VEX bytes (Intel SDM vol. 2: C4 E2 <W vvvv L pp>
// <opcode> <ModRM> [SIB] [disp8]); only registers 0-7 appear in ModRM/SIB.

#include "textflag.h"

// Tiles (amxQ8Config): tmm0, tmm1 the C tiles (16 tokens x 16 rows of int32) of two blocks in
// flight, tmm2, tmm3 their A tiles (16 tokens x 32 values), tmm4, tmm5 their B tiles (8 rows of
// 64 bytes: dword lane r of row j = values 4j..4j+3 of weight row r).

#define LDTILECFG_DI BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x07
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
#define ZERO_T0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC0
#define ZERO_T1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC8
// TILELOADD tmm2 / tmm3, [AX+BX]
#define LOAD_A2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x18
#define LOAD_A3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x1C; BYTE $0x18
// TILELOADD tmm4 / tmm5, [SI+DI+32]
#define LOAD_B4 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x64; BYTE $0x3E; BYTE $0x20
#define LOAD_B5 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x6C; BYTE $0x3E; BYTE $0x20
// TDPBSSD tmm0, tmm2, tmm4 / tmm1, tmm3, tmm5 (F2 0F38 5E; vvvv = ~B)
#define DP_0 BYTE $0xC4; BYTE $0xE2; BYTE $0x5B; BYTE $0x5E; BYTE $0xC2
#define DP_1 BYTE $0xC4; BYTE $0xE2; BYTE $0x53; BYTE $0x5E; BYTE $0xCB
// TILESTORED [DX+DI], tmm0 / [CX+DI], tmm1
#define STORE_0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x3A
#define STORE_1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x0C; BYTE $0x39

// One token's epilogue: acc = fma(float(sumi)·dx, dw (Z16), acc); sumi at off(buf), dx at
// doff(R11).
#define EPI(buf, off, doff, tmp, acc) \
	VCVTDQ2PS off(buf), tmp; \
	VMULPS.BCST doff(R11), tmp, tmp; \
	VFMADD231PS tmp, Z16, acc

#define EPILOGUE(buf) \
	EPI(buf, 0, 0, Z17, Z0); \
	EPI(buf, 64, 4, Z18, Z1); \
	EPI(buf, 128, 8, Z19, Z2); \
	EPI(buf, 192, 12, Z20, Z3); \
	EPI(buf, 256, 16, Z21, Z4); \
	EPI(buf, 320, 20, Z22, Z5); \
	EPI(buf, 384, 24, Z23, Z6); \
	EPI(buf, 448, 28, Z24, Z7); \
	EPI(buf, 512, 32, Z17, Z8); \
	EPI(buf, 576, 36, Z18, Z9); \
	EPI(buf, 640, 40, Z19, Z10); \
	EPI(buf, 704, 44, Z20, Z11); \
	EPI(buf, 768, 48, Z21, Z12); \
	EPI(buf, 832, 52, Z22, Z13); \
	EPI(buf, 896, 56, Z23, Z14); \
	EPI(buf, 960, 60, Z24, Z15); \
	ADDQ $64, R11

// func q8TileAMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int)
//
// One 16-row group x 16 tokens over nb blocks: the group's block b at w + 544b (16 fp16
// scales, then the B tile), token t's block b at a + t·astride + 32b, the tokens' scales of
// block b at dt + 64b; out[t·ostride + r] = Σ_b in order fma(float(sumi)·dx, dw, ·). buf is
// 2 KiB of scratch (the two C tiles' sums).
TEXT ·q8TileAMX(SB), NOSPLIT, $0-72
	MOVQ cfg+0(FP), DI
	LDTILECFG_DI
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), AX
	MOVQ astride+24(FP), BX
	MOVQ dt+32(FP), R11
	MOVQ nb+40(FP), R12
	MOVQ buf+48(FP), DX
	LEAQ 1024(DX), CX
	MOVQ $64, DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	// block 0 into tmm0
	ZERO_T0
	LOAD_A2
	LOAD_B4
	DP_0
	ADDQ $32, AX
	ADDQ $544, SI

loop:
	DECQ R12
	JZ last0
	// the next block into tmm1 while tmm0's block goes through the epilogue
	ZERO_T1
	LOAD_A3
	LOAD_B5
	DP_1
	ADDQ $32, AX
	ADDQ $544, SI
	STORE_0
	VCVTPH2PS -1088(SI), Z16
	EPILOGUE(DX)
	DECQ R12
	JZ last1
	ZERO_T0
	LOAD_A2
	LOAD_B4
	DP_0
	ADDQ $32, AX
	ADDQ $544, SI
	STORE_1
	VCVTPH2PS -1088(SI), Z16
	EPILOGUE(CX)
	JMP loop

last0:
	STORE_0
	VCVTPH2PS -544(SI), Z16
	EPILOGUE(DX)
	JMP done
last1:
	STORE_1
	VCVTPH2PS -544(SI), Z16
	EPILOGUE(CX)

done:
	TILERELEASE
	MOVQ out+56(FP), AX
	MOVQ ostride+64(FP), BX
	SHLQ $2, BX
	VMOVUPS Z0, (AX)
	ADDQ BX, AX
	VMOVUPS Z1, (AX)
	ADDQ BX, AX
	VMOVUPS Z2, (AX)
	ADDQ BX, AX
	VMOVUPS Z3, (AX)
	ADDQ BX, AX
	VMOVUPS Z4, (AX)
	ADDQ BX, AX
	VMOVUPS Z5, (AX)
	ADDQ BX, AX
	VMOVUPS Z6, (AX)
	ADDQ BX, AX
	VMOVUPS Z7, (AX)
	ADDQ BX, AX
	VMOVUPS Z8, (AX)
	ADDQ BX, AX
	VMOVUPS Z9, (AX)
	ADDQ BX, AX
	VMOVUPS Z10, (AX)
	ADDQ BX, AX
	VMOVUPS Z11, (AX)
	ADDQ BX, AX
	VMOVUPS Z12, (AX)
	ADDQ BX, AX
	VMOVUPS Z13, (AX)
	ADDQ BX, AX
	VMOVUPS Z14, (AX)
	ADDQ BX, AX
	VMOVUPS Z15, (AX)
	VZEROUPPER
	RET

// func unpackQ4AMX(dst *byte, src *byte, nb int)
//
// Rewrites nb blocks of a Q4_0 16-row group (the VNNI pack, 288 bytes a block: 16 fp16
// scales, four registers of nibble bytes) as the AMX tile's Q8_0 group layout (544 bytes: the
// scales, then B rows 0-3 the low nibbles - 8 of registers 0-3, rows 4-7 the high ones).
TEXT ·unpackQ4AMX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z30

unpack:
	VMOVDQU (SI), Y0
	VMOVDQU Y0, (DI)
	VMOVDQU64 32(SI), Z0
	VMOVDQU64 96(SI), Z1
	VMOVDQU64 160(SI), Z2
	VMOVDQU64 224(SI), Z3
	VPANDD Z31, Z0, Z4
	VPANDD Z31, Z1, Z5
	VPANDD Z31, Z2, Z6
	VPANDD Z31, Z3, Z7
	VPSRLW $4, Z0, Z0
	VPSRLW $4, Z1, Z1
	VPSRLW $4, Z2, Z2
	VPSRLW $4, Z3, Z3
	VPANDD Z31, Z0, Z0
	VPANDD Z31, Z1, Z1
	VPANDD Z31, Z2, Z2
	VPANDD Z31, Z3, Z3
	VPSUBB Z30, Z4, Z4
	VPSUBB Z30, Z5, Z5
	VPSUBB Z30, Z6, Z6
	VPSUBB Z30, Z7, Z7
	VPSUBB Z30, Z0, Z0
	VPSUBB Z30, Z1, Z1
	VPSUBB Z30, Z2, Z2
	VPSUBB Z30, Z3, Z3
	VMOVDQU64 Z4, 32(DI)
	VMOVDQU64 Z5, 96(DI)
	VMOVDQU64 Z6, 160(DI)
	VMOVDQU64 Z7, 224(DI)
	VMOVDQU64 Z0, 288(DI)
	VMOVDQU64 Z1, 352(DI)
	VMOVDQU64 Z2, 416(DI)
	VMOVDQU64 Z3, 480(DI)
	ADDQ $288, SI
	ADDQ $544, DI
	DECQ CX
	JNZ unpack
	VZEROUPPER
	RET
