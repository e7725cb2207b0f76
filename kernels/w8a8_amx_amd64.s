// AMX-INT8 tiles of the W8A8 GEMM (w8a8_amx.go). Tile instructions as VEX bytes (Intel SDM
// vol. 2; encodings checked with GNU as), only registers 0-7 in ModRM/SIB. Tiles (w8AMXConfig):
// tmm0 the A tile (16 tokens x 64 int8 values, stride BX), tmm1 / tmm2 the B tiles of groups 0
// and 1 (16 rows of 64 bytes: 16 registers of the W8A8 pack, stride DX = 64), tmm4 / tmm5 their
// int32 sums. TDPBSUD multiplies the signed activations by the stored bytes w+128 (unsigned),
// so a sum is Σ(w+128)·q over the whole k, and the epilogue is the VNNI tiles' one:
// out = float32(float32(sum - cx)·dw)·dx.

#include "textflag.h"

#define LDTILECFG_DI BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x07
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
// TILEZERO tmm4, tmm5
#define W8_ZERO_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE0
#define W8_ZERO_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE8
// TILELOADD tmm0, [AX+BX]
#define W8_LOAD_A BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x18
// TILELOADD tmm1, [SI+DX]
#define W8_LOAD_B0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x16
// TILELOADD tmm2, [DI+DX]
#define W8_LOAD_B1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x17
// TDPBSUD tmm4, tmm0, tmm1
#define W8_DP_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x72; BYTE $0x5E; BYTE $0xE0
// TDPBSUD tmm5, tmm0, tmm2
#define W8_DP_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x6A; BYTE $0x5E; BYTE $0xE8
// TILESTORED [CX+DX], tmm4
#define W8_STORE_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x24; BYTE $0x11
// TILESTORED [CX+DX+1024], tmm5
#define W8_STORE_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xAC; BYTE $0x11; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00

// EPI(c, dw, off): one token's 16 rows of C tile c (its sums at SI + c·1024): Z2 holds the
// token's cx, Z4 its dx; the results to DI + off.
#define EPI(c, dw, off) \
	VMOVDQU32 c(SI), Z3; \
	VPSUBD    Z2, Z3, Z3; \
	VCVTDQ2PS Z3, Z3; \
	VMULPS    dw, Z3, Z3; \
	VMULPS    Z4, Z3, Z3; \
	VMOVUPS   Z3, off(DI)

// func w8TileAMX2(cfg *byte, w *byte, gbytes int, a *byte, astride int, nc int, dx *float32, cx *int32, buf *int32, out *float32, ostride int, tiles int)
//
// tiles token tiles of 16 x two 16-row groups (group 1 at w + gbytes) over nc chunks of 64
// values: tile i's token t at a + (16i+t)·astride, its scale and correction at dx, cx[16i+t],
// out[(16i+t)·ostride + r], r < 32. buf is 2 KiB of scratch.
TEXT ·w8TileAMX2(SB), NOSPLIT, $0-96
	MOVQ cfg+0(FP), DI
	LDTILECFG_DI
	MOVQ astride+32(FP), BX
	MOVQ $64, DX
	MOVQ buf+64(FP), CX
	MOVQ dx+48(FP), R12
	MOVQ cx+56(FP), R13
	MOVQ out+72(FP), R14
	MOVQ ostride+80(FP), R11
	SHLQ $2, R11
	MOVQ a+24(FP), R8
	// the groups' row scales follow their nc·16 registers
	MOVQ w+8(FP), R9
	MOVQ nc+40(FP), AX
	SHLQ $10, AX
	VMOVUPS (R9)(AX*1), Z0
	ADDQ gbytes+16(FP), R9
	VMOVUPS (R9)(AX*1), Z1

tile2:
	W8_ZERO_C0
	W8_ZERO_C1
	MOVQ R8, AX
	MOVQ w+8(FP), SI
	MOVQ SI, DI
	ADDQ gbytes+16(FP), DI
	MOVQ nc+40(FP), R10

chunk2:
	W8_LOAD_A
	W8_LOAD_B0
	W8_LOAD_B1
	W8_DP_C0
	W8_DP_C1
	ADDQ $64, AX
	ADDQ $1024, SI
	ADDQ $1024, DI
	DECQ R10
	JNZ  chunk2

	W8_STORE_C0
	W8_STORE_C1
	MOVQ CX, SI
	MOVQ R14, DI
	MOVQ $16, R10

epi2:
	VPBROADCASTD (R13), Z2
	VBROADCASTSS (R12), Z4
	EPI(0, Z0, 0)
	EPI(1024, Z1, 64)
	ADDQ $64, SI
	ADDQ R11, DI
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ R10
	JNZ  epi2

	// the next token tile: a += 16·astride, out += 16·ostride
	MOVQ BX, AX
	SHLQ $4, AX
	ADDQ AX, R8
	MOVQ R11, AX
	SHLQ $4, AX
	ADDQ AX, R14
	DECQ tiles+88(FP)
	JNZ  tile2

	TILERELEASE
	VZEROUPPER
	RET

// func w8TileAMX1(cfg *byte, w *byte, gbytes int, a *byte, astride int, nc int, dx *float32, cx *int32, buf *int32, out *float32, ostride int, tiles int)
//
// w8TileAMX2 for one group: out[(16i+t)·ostride + r], r < 16.
TEXT ·w8TileAMX1(SB), NOSPLIT, $0-96
	MOVQ cfg+0(FP), DI
	LDTILECFG_DI
	MOVQ astride+32(FP), BX
	MOVQ $64, DX
	MOVQ buf+64(FP), CX
	MOVQ dx+48(FP), R12
	MOVQ cx+56(FP), R13
	MOVQ out+72(FP), R14
	MOVQ ostride+80(FP), R11
	SHLQ $2, R11
	MOVQ a+24(FP), R8
	MOVQ w+8(FP), R9
	MOVQ nc+40(FP), AX
	SHLQ $10, AX
	VMOVUPS (R9)(AX*1), Z0

tile1:
	W8_ZERO_C0
	MOVQ R8, AX
	MOVQ w+8(FP), SI
	MOVQ nc+40(FP), R10

chunk1:
	W8_LOAD_A
	W8_LOAD_B0
	W8_DP_C0
	ADDQ $64, AX
	ADDQ $1024, SI
	DECQ R10
	JNZ  chunk1

	W8_STORE_C0
	MOVQ CX, SI
	MOVQ R14, DI
	MOVQ $16, R10

epi1:
	VPBROADCASTD (R13), Z2
	VBROADCASTSS (R12), Z4
	EPI(0, Z0, 0)
	ADDQ $64, SI
	ADDQ R11, DI
	ADDQ $4, R12
	ADDQ $4, R13
	DECQ R10
	JNZ  epi1

	MOVQ BX, AX
	SHLQ $4, AX
	ADDQ AX, R8
	MOVQ R11, AX
	SHLQ $4, AX
	ADDQ AX, R14
	DECQ tiles+88(FP)
	JNZ  tile1

	TILERELEASE
	VZEROUPPER
	RET
