// AMX-INT8 tile of the Q8_0 / Q4_0 prefill GEMM (quant_amx.go). As in gemm_bf16_amx_amd64.s
// the tile instructions are written as their VEX bytes (Intel SDM vol. 2: C4 E2 <W vvvv L pp>
// <opcode> <ModRM> [SIB] [disp8]); only registers 0-7 appear in ModRM/SIB.

#include "textflag.h"

// Tiles (amxQ8Config): tmm0-3 the C tiles (16 tokens x 16 rows of int32) of four blocks in
// flight, block j in tmm(j mod 4); tmm4-5 the A tiles (16 tokens x 32 values) and tmm6-7 the B
// tiles (8 rows of 64 bytes: dword lane r of row j = values 4j..4j+3 of weight row r), block j
// in the pair j mod 2. The tile registers are not renamed, so a block's C tile is stored two
// blocks after its TDPBSSD was issued and read back by the epilogue one block later: the tile
// unit multiplies blocks i+1..i+3 while AVX-512 runs block i's epilogue.

#include "quant_amx_amd64.h"

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

#define EPILOGUE4(buf) \
	EPI(buf, 0, 0, Z17, Z0); \
	EPI(buf, 64, 4, Z18, Z1); \
	EPI(buf, 128, 8, Z19, Z2); \
	EPI(buf, 192, 12, Z20, Z3); \
	ADDQ $64, R11

// func q8TileAMX(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)
//
// tiles token tiles of 16 x one 16-row group over nb blocks: the group's block b at w + 544b
// (16 fp16 scales, then the B tile); tile i's token t's block b at a + (16i+t)·astride + 32b,
// its tokens' scales of block b at dt + 64(i·nb+b); out[(16i+t)·ostride + r] = Σ_b in order
// fma(float(sumi)·dx, dw, ·). buf is 2 KiB of scratch (two blocks' sums).
TEXT ·q8TileAMX(SB), NOSPLIT, $0-80
	MOVQ cfg+0(FP), DI
	LDTILECFG_DI
	MOVQ astride+24(FP), BX
	MOVQ dt+32(FP), R11
	MOVQ buf+48(FP), DX
	LEAQ 1024(DX), CX
	MOVQ $64, DI
	MOVQ out+56(FP), R10

tile:
	// AX, SI: the next block to issue; R8: the next block's scales for the epilogue; R12, R9,
	// R13: blocks left to issue, to store, to finish.
	MOVQ a+16(FP), AX
	MOVQ w+8(FP), SI
	MOVQ SI, R8
	MOVQ nb+40(FP), R12
	MOVQ R12, R9
	MOVQ R12, R13
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

	// prologue: blocks 0-2 issued, block 0 stored
	TESTQ R12, R12
	JZ pro0
	ZERO_C0
	LOAD_A0
	LOAD_B0
	DP_C0
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
pro0:
	TESTQ R12, R12
	JZ pro1
	ZERO_C1
	LOAD_A1
	LOAD_B1
	DP_C1
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
pro1:
	TESTQ R12, R12
	JZ pro2
	ZERO_C2
	LOAD_A0
	LOAD_B0
	DP_C2
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
pro2:
	TESTQ R9, R9
	JZ pro3
	STORE_C0_DX
	DECQ R9
pro3:

blocks:
	// phase 0: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss0
	ZERO_C3
	LOAD_A1
	LOAD_B1
	DP_C3
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss0:
	TESTQ R9, R9
	JZ sto0
	STORE_C1_CX
	DECQ R9
sto0:
	VCVTPH2PS (R8), Z16
	EPILOGUE(DX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	// phase 1: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss1
	ZERO_C0
	LOAD_A0
	LOAD_B0
	DP_C0
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss1:
	TESTQ R9, R9
	JZ sto1
	STORE_C2_DX
	DECQ R9
sto1:
	VCVTPH2PS (R8), Z16
	EPILOGUE(CX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	// phase 2: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss2
	ZERO_C1
	LOAD_A1
	LOAD_B1
	DP_C1
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss2:
	TESTQ R9, R9
	JZ sto2
	STORE_C3_CX
	DECQ R9
sto2:
	VCVTPH2PS (R8), Z16
	EPILOGUE(DX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	// phase 3: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss3
	ZERO_C2
	LOAD_A0
	LOAD_B0
	DP_C2
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss3:
	TESTQ R9, R9
	JZ sto3
	STORE_C0_DX
	DECQ R9
sto3:
	VCVTPH2PS (R8), Z16
	EPILOGUE(CX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	JMP blocks


tiledone:
	MOVQ ostride+64(FP), R9
	SHLQ $2, R9
	VMOVUPS Z0, (R10)
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	ADDQ R9, R10
	VMOVUPS Z4, (R10)
	ADDQ R9, R10
	VMOVUPS Z5, (R10)
	ADDQ R9, R10
	VMOVUPS Z6, (R10)
	ADDQ R9, R10
	VMOVUPS Z7, (R10)
	ADDQ R9, R10
	VMOVUPS Z8, (R10)
	ADDQ R9, R10
	VMOVUPS Z9, (R10)
	ADDQ R9, R10
	VMOVUPS Z10, (R10)
	ADDQ R9, R10
	VMOVUPS Z11, (R10)
	ADDQ R9, R10
	VMOVUPS Z12, (R10)
	ADDQ R9, R10
	VMOVUPS Z13, (R10)
	ADDQ R9, R10
	VMOVUPS Z14, (R10)
	ADDQ R9, R10
	VMOVUPS Z15, (R10)
	ADDQ R9, R10
	// the next token tile: a += 16·astride (dt moved on with the epilogues)
	MOVQ BX, R9
	SHLQ $4, R9
	ADDQ R9, a+16(FP)
	DECQ tiles+72(FP)
	JNZ tile

	TILERELEASE
	VZEROUPPER
	RET

// func q8TileAMX4(cfg *byte, w *byte, a *int8, astride int, dt *float32, nb int, buf *int32, out *float32, ostride int, tiles int)
//
// q8TileAMX on tiles of 4 tokens (cfg amxQ8Config4: A and C tiles of 4 rows) for a last few
// tokens (the tile unit's time and the epilogue's scale with the rows); the scales of tile i
// still at dt + 64(i·nb+b), a tile's results at out[(16i+t)·ostride + r], t < 4. For q8TileAMX:
// tiles token tiles of 16 x one 16-row group over nb blocks: the group's block b at w + 544b
// (16 fp16 scales, then the B tile); tile i's token t's block b at a + (16i+t)·astride + 32b,
// its tokens' scales of block b at dt + 64(i·nb+b); out[(16i+t)·ostride + r] = Σ_b in order
// fma(float(sumi)·dx, dw, ·). buf is 2 KiB of scratch (two blocks' sums).
TEXT ·q8TileAMX4(SB), NOSPLIT, $0-80
	MOVQ cfg+0(FP), DI
	LDTILECFG_DI
	MOVQ astride+24(FP), BX
	MOVQ dt+32(FP), R11
	MOVQ buf+48(FP), DX
	LEAQ 1024(DX), CX
	MOVQ $64, DI
	MOVQ out+56(FP), R10

tile:
	// AX, SI: the next block to issue; R8: the next block's scales for the epilogue; R12, R9,
	// R13: blocks left to issue, to store, to finish.
	MOVQ a+16(FP), AX
	MOVQ w+8(FP), SI
	MOVQ SI, R8
	MOVQ nb+40(FP), R12
	MOVQ R12, R9
	MOVQ R12, R13
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

	// prologue: blocks 0-2 issued, block 0 stored
	TESTQ R12, R12
	JZ pro0
	ZERO_C0
	LOAD_A0
	LOAD_B0
	DP_C0
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
pro0:
	TESTQ R12, R12
	JZ pro1
	ZERO_C1
	LOAD_A1
	LOAD_B1
	DP_C1
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
pro1:
	TESTQ R12, R12
	JZ pro2
	ZERO_C2
	LOAD_A0
	LOAD_B0
	DP_C2
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
pro2:
	TESTQ R9, R9
	JZ pro3
	STORE_C0_DX
	DECQ R9
pro3:

blocks:
	// phase 0: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss0
	ZERO_C3
	LOAD_A1
	LOAD_B1
	DP_C3
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss0:
	TESTQ R9, R9
	JZ sto0
	STORE_C1_CX
	DECQ R9
sto0:
	VCVTPH2PS (R8), Z16
	EPILOGUE4(DX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	// phase 1: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss1
	ZERO_C0
	LOAD_A0
	LOAD_B0
	DP_C0
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss1:
	TESTQ R9, R9
	JZ sto1
	STORE_C2_DX
	DECQ R9
sto1:
	VCVTPH2PS (R8), Z16
	EPILOGUE4(CX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	// phase 2: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss2
	ZERO_C1
	LOAD_A1
	LOAD_B1
	DP_C1
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss2:
	TESTQ R9, R9
	JZ sto2
	STORE_C3_CX
	DECQ R9
sto2:
	VCVTPH2PS (R8), Z16
	EPILOGUE4(DX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	// phase 3: issue block i+3, store i+1, epilogue of i
	TESTQ R12, R12
	JZ iss3
	ZERO_C2
	LOAD_A0
	LOAD_B0
	DP_C2
	ADDQ $32, AX
	ADDQ $544, SI
	DECQ R12
iss3:
	TESTQ R9, R9
	JZ sto3
	STORE_C0_DX
	DECQ R9
sto3:
	VCVTPH2PS (R8), Z16
	EPILOGUE4(CX)
	ADDQ $544, R8
	DECQ R13
	JZ tiledone
	JMP blocks


tiledone:
	MOVQ ostride+64(FP), R9
	SHLQ $2, R9
	VMOVUPS Z0, (R10)
	ADDQ R9, R10
	VMOVUPS Z1, (R10)
	ADDQ R9, R10
	VMOVUPS Z2, (R10)
	ADDQ R9, R10
	VMOVUPS Z3, (R10)
	IMULQ $13, R9
	ADDQ R9, R10
	// the next token tile: a += 16·astride (dt moved on with the epilogues)
	MOVQ BX, R9
	SHLQ $4, R9
	ADDQ R9, a+16(FP)
	DECQ tiles+72(FP)
	JNZ tile

	TILERELEASE
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
