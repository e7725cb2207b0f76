// AMX-BF16 micro-kernel of GemmBF16 (gemm_bf16_amx.go). The Go assembler has no AMX
// mnemonics, so each instruction is written as its VEX bytes (Intel SDM vol. 2, "TDPBF16PS",
// "TILELOADD", ...): C4 E2 <W vvvv L pp> <opcode> <ModRM> [SIB] [disp8]. Only registers
// 0-7 appear in ModRM/SIB, so VEX's inverted R/X/B bits stay 1 (byte E2).

#include "textflag.h"

// tile registers: tmm0-3 the 2x2 C tiles, tmm4-5 the A tiles (rows 0-15, 16-31), tmm6-7 the
// B tiles (columns 0-15, 16-31); every tile 16 rows of 64 bytes.

// LDTILECFG (DI)
#define LDTILECFG_DI BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x07
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
// TILEZERO tmmN: ModRM 11 N 000
#define TILEZERO(modrm) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE modrm
// TILELOADD tmmN, [base+index*1]: pp = F2; TILESTORED: pp = F3
#define TLOAD(modrm, sib) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE modrm; BYTE sib
#define TLOAD64(modrm, sib) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE modrm; BYTE sib; BYTE $0x40
#define TSTORE(modrm, sib) BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE modrm; BYTE sib
#define TSTORE64(modrm, sib) BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE modrm; BYTE sib; BYTE $0x40
// TDPBF16PS tmmD, tmmA, tmmB: byte 3 = (~B & 15) << 3 | 2 (F3), ModRM 11 D A
#define TDP(b3, modrm) BYTE $0xC4; BYTE $0xE2; BYTE b3; BYTE $0x5C; BYTE modrm

// func gemmBF16AMX(cfg *byte, kp int, a *uint32, b *uint32, c *float32, ldc int, acc int, panels int)
//
// For each of panels 32-row panels p: C[32p+r][j] (+)= Σ_q pairs, r, j < 32, q < kp (a
// multiple of 16). A panel p's row r holds its kp pairs at a + (32p+r)·4kp; B's pair row q
// holds 32 columns at b + 128q; C's row i is at c + i·ldc (bytes).
TEXT ·gemmBF16AMX(SB), NOSPLIT, $0-64
	MOVQ cfg+0(FP), DI
	LDTILECFG_DI
	MOVQ panels+56(FP), R10
	MOVQ a+16(FP), R11          // this panel's A
	MOVQ c+32(FP), R12          // this panel's C

panel:
	// C tiles: loaded (acc) or zeroed. AX = C rows 0-15, DX = rows 16-31, CX = ldc.
	MOVQ R12, AX
	MOVQ ldc+40(FP), CX
	MOVQ CX, DX
	SHLQ $4, DX
	ADDQ AX, DX
	MOVQ acc+48(FP), BX
	TESTQ BX, BX
	JZ zero
	TLOAD($0x04, $0x08)          // tmm0, [AX+CX]
	TLOAD64($0x4C, $0x08)        // tmm1, [AX+CX+64]
	TLOAD($0x14, $0x0A)          // tmm2, [DX+CX]
	TLOAD64($0x5C, $0x0A)        // tmm3, [DX+CX+64]
	JMP start
zero:
	TILEZERO($0xC0)
	TILEZERO($0xC8)
	TILEZERO($0xD0)
	TILEZERO($0xD8)

start:
	// SI = A rows 0-15, DI = A rows 16-31 (stride BX = 4kp), DX = B (stride CX = 128).
	MOVQ kp+8(FP), R9
	MOVQ R9, BX
	SHLQ $2, BX
	MOVQ R11, SI
	MOVQ BX, DI
	SHLQ $4, DI
	ADDQ SI, DI
	MOVQ b+24(FP), DX
	MOVQ $128, CX
	SHRQ $4, R9

loop:
	TLOAD($0x24, $0x1E)          // tmm4, [SI+BX]
	TLOAD($0x2C, $0x1F)          // tmm5, [DI+BX]
	TLOAD($0x34, $0x0A)          // tmm6, [DX+CX]
	TLOAD64($0x7C, $0x0A)        // tmm7, [DX+CX+64]
	TDP($0x4A, $0xC4)            // tmm0 += tmm4 · tmm6
	TDP($0x42, $0xCC)            // tmm1 += tmm4 · tmm7
	TDP($0x4A, $0xD5)            // tmm2 += tmm5 · tmm6
	TDP($0x42, $0xDD)            // tmm3 += tmm5 · tmm7
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $2048, DX
	DECQ R9
	JNZ loop

	MOVQ R12, AX
	MOVQ ldc+40(FP), CX
	MOVQ CX, DX
	SHLQ $4, DX
	ADDQ AX, DX
	TSTORE($0x04, $0x08)         // [AX+CX], tmm0
	TSTORE64($0x4C, $0x08)       // [AX+CX+64], tmm1
	TSTORE($0x14, $0x0A)         // [DX+CX], tmm2
	TSTORE64($0x5C, $0x0A)       // [DX+CX+64], tmm3

	// next panel: A += 32 rows of 4kp bytes, C += 32 rows of ldc bytes
	MOVQ kp+8(FP), BX
	SHLQ $7, BX
	ADDQ BX, R11
	MOVQ ldc+40(FP), CX
	SHLQ $5, CX
	ADDQ CX, R12
	DECQ R10
	JNZ panel

	TILERELEASE
	RET
