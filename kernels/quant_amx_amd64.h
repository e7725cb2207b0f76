// Tile instructions of the AMX-INT8 quantized GEMM tiles (quant_amx_amd64.s,
// quant_amxk_amd64.s), written as their VEX bytes (Intel SDM vol. 2: C4 E2 <W vvvv L pp>
// <opcode> <ModRM> [SIB] [disp8]); only registers 0-7 appear in ModRM/SIB. Tiles: tmm0-3 the
// C tiles, tmm4-5 the A tiles (tokens), tmm6-7 the B tiles (weights); AX + BX the A tile
// (stride BX), SI + DI the B tile (stride DI = 64), DX + DI and CX + DI the C scratch.

#define LDTILECFG_DI BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x07
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
// TILEZERO tmm0-3
#define ZERO_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xc0
#define ZERO_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xc8
#define ZERO_C2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xd0
#define ZERO_C3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xd8
// TILELOADD tmm4, [AX+BX]
#define LOAD_A0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x24; BYTE $0x18
// TILELOADD tmm5, [AX+BX]
#define LOAD_A1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x2c; BYTE $0x18
// TILELOADD tmm6, [SI+DI+32]
#define LOAD_B0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x74; BYTE $0x3E; BYTE $0x20
// TILELOADD tmm7, [SI+DI+32]
#define LOAD_B1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x7c; BYTE $0x3E; BYTE $0x20
// TDPBSSD tmm0, tmm4, tmm6
#define DP_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x4b; BYTE $0x5E; BYTE $0xc4
// TDPBSSD tmm1, tmm5, tmm7
#define DP_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x43; BYTE $0x5E; BYTE $0xcd
// TDPBSSD tmm2, tmm4, tmm6
#define DP_C2 BYTE $0xC4; BYTE $0xE2; BYTE $0x4b; BYTE $0x5E; BYTE $0xd4
// TDPBSSD tmm3, tmm5, tmm7
#define DP_C3 BYTE $0xC4; BYTE $0xE2; BYTE $0x43; BYTE $0x5E; BYTE $0xdd
// TILESTORED [DX+DI], tmm0
#define STORE_C0_DX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x3a
// TILESTORED [CX+DI], tmm0
#define STORE_C0_CX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x39
// TILESTORED [DX+DI], tmm1
#define STORE_C1_DX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x0c; BYTE $0x3a
// TILESTORED [CX+DI], tmm1
#define STORE_C1_CX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x0c; BYTE $0x39
// TILESTORED [DX+DI], tmm2
#define STORE_C2_DX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x3a
// TILESTORED [CX+DI], tmm2
#define STORE_C2_CX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x39
// TILESTORED [DX+DI], tmm3
#define STORE_C3_DX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x1c; BYTE $0x3a
// TILESTORED [CX+DI], tmm3
#define STORE_C3_CX BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x1c; BYTE $0x39
// TILELOADD tmm6, [SI+DI] (the B tile at the start of a record)
#define LOAD_BK0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x74; BYTE $0x3E; BYTE $0x00
// TILELOADD tmm7, [SI+DI]
#define LOAD_BK1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x7c; BYTE $0x3E; BYTE $0x00
