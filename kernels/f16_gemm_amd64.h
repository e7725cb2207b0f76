// Macros of the hand-written AVX2 F16 GEMM kernels (float_gemm_stream_amd64.s): the 8-column
// steps of the 3x4 tile and its reduction (hsum4's tree).

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
