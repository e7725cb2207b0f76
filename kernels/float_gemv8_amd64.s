#include "textflag.h"

// func gemvF16x8(w *uint16, ldw int, x *float32, k int, out *float32)
// Requires: AVX512F, AVX512VL, F16C, FMA3
//
// out[r] = Σ_i w[r·ldw/2 + i]·x[i] for the eight rows r < 8, k a multiple of 8: gemvF16x4's
// math on eight rows at once, so that a decode worker reads eight weight streams side by side
// (float_streams.go). Each row has one 16-lane ZMM accumulator whose lanes 0-7 and 8-15 are
// gemvF16x4's two YMM accumulators (column 16i+l in lane l), fed by the same FMAs in the same
// order; the reduction is gemvF16x4's too, so every row's sum is bit for bit gemvF16x4's.
// Rows: 0 (AX), 1 (SI), 2 (AX)(CX*2), 3 (SI)(CX*2), 4 (DI), 5 (R8), 6 (DI)(CX*2), 7 (R8)(CX*2).
TEXT ·gemvF16x8(SB), NOSPLIT, $0-40
	MOVQ   w+0(FP), AX
	MOVQ   ldw+8(FP), CX
	MOVQ   x+16(FP), DX
	MOVQ   k+24(FP), BX
	LEAQ   (AX)(CX*1), SI
	LEAQ   (AX)(CX*4), DI
	LEAQ   (SI)(CX*4), R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

	// 32 columns (one 64-byte line of each row) per iteration: two FMAs per accumulator, in
	// column order.
loop32:
	CMPQ        BX, $0x20
	JL          loop16
	VMOVUPS     (DX), Z8
	VMOVUPS     64(DX), Z9
	VCVTPH2PS   (AX), Z10
	VCVTPH2PS   (SI), Z11
	VCVTPH2PS   (AX)(CX*2), Z12
	VCVTPH2PS   (SI)(CX*2), Z13
	VCVTPH2PS   (DI), Z14
	VCVTPH2PS   (R8), Z15
	VCVTPH2PS   (DI)(CX*2), Z16
	VCVTPH2PS   (R8)(CX*2), Z17
	VFMADD231PS Z8, Z10, Z0
	VFMADD231PS Z8, Z11, Z1
	VFMADD231PS Z8, Z12, Z2
	VFMADD231PS Z8, Z13, Z3
	VFMADD231PS Z8, Z14, Z4
	VFMADD231PS Z8, Z15, Z5
	VFMADD231PS Z8, Z16, Z6
	VFMADD231PS Z8, Z17, Z7
	VCVTPH2PS   32(AX), Z10
	VCVTPH2PS   32(SI), Z11
	VCVTPH2PS   32(AX)(CX*2), Z12
	VCVTPH2PS   32(SI)(CX*2), Z13
	VCVTPH2PS   32(DI), Z14
	VCVTPH2PS   32(R8), Z15
	VCVTPH2PS   32(DI)(CX*2), Z16
	VCVTPH2PS   32(R8)(CX*2), Z17
	VFMADD231PS Z9, Z10, Z0
	VFMADD231PS Z9, Z11, Z1
	VFMADD231PS Z9, Z12, Z2
	VFMADD231PS Z9, Z13, Z3
	VFMADD231PS Z9, Z14, Z4
	VFMADD231PS Z9, Z15, Z5
	VFMADD231PS Z9, Z16, Z6
	VFMADD231PS Z9, Z17, Z7
	ADDQ        $0x80, DX
	ADDQ        $0x40, AX
	ADDQ        $0x40, SI
	ADDQ        $0x40, DI
	ADDQ        $0x40, R8
	SUBQ        $0x20, BX
	JMP         loop32

loop16:
	CMPQ        BX, $0x10
	JL          split
	VMOVUPS     (DX), Z8
	VCVTPH2PS   (AX), Z10
	VCVTPH2PS   (SI), Z11
	VCVTPH2PS   (AX)(CX*2), Z12
	VCVTPH2PS   (SI)(CX*2), Z13
	VCVTPH2PS   (DI), Z14
	VCVTPH2PS   (R8), Z15
	VCVTPH2PS   (DI)(CX*2), Z16
	VCVTPH2PS   (R8)(CX*2), Z17
	VFMADD231PS Z8, Z10, Z0
	VFMADD231PS Z8, Z11, Z1
	VFMADD231PS Z8, Z12, Z2
	VFMADD231PS Z8, Z13, Z3
	VFMADD231PS Z8, Z14, Z4
	VFMADD231PS Z8, Z15, Z5
	VFMADD231PS Z8, Z16, Z6
	VFMADD231PS Z8, Z17, Z7
	ADDQ        $0x40, DX
	ADDQ        $0x20, AX
	ADDQ        $0x20, SI
	ADDQ        $0x20, DI
	ADDQ        $0x20, R8
	SUBQ        $0x10, BX

	// Lanes 8-15 (gemvF16x4's second accumulators) aside; the VEX FMAs below clear the upper
	// halves of Z0-Z7.
split:
	VEXTRACTF64X4 $1, Z0, Y16
	VEXTRACTF64X4 $1, Z1, Y17
	VEXTRACTF64X4 $1, Z2, Y18
	VEXTRACTF64X4 $1, Z3, Y19
	VEXTRACTF64X4 $1, Z4, Y20
	VEXTRACTF64X4 $1, Z5, Y21
	VEXTRACTF64X4 $1, Z6, Y22
	VEXTRACTF64X4 $1, Z7, Y23
	CMPQ          BX, $0x08
	JL            reduce
	VMOVUPS       (DX), Y8
	VCVTPH2PS     (AX), Y10
	VFMADD231PS   Y8, Y10, Y0
	VCVTPH2PS     (SI), Y10
	VFMADD231PS   Y8, Y10, Y1
	VCVTPH2PS     (AX)(CX*2), Y10
	VFMADD231PS   Y8, Y10, Y2
	VCVTPH2PS     (SI)(CX*2), Y10
	VFMADD231PS   Y8, Y10, Y3
	VCVTPH2PS     (DI), Y10
	VFMADD231PS   Y8, Y10, Y4
	VCVTPH2PS     (R8), Y10
	VFMADD231PS   Y8, Y10, Y5
	VCVTPH2PS     (DI)(CX*2), Y10
	VFMADD231PS   Y8, Y10, Y6
	VCVTPH2PS     (R8)(CX*2), Y10
	VFMADD231PS   Y8, Y10, Y7

reduce:
	VADDPS       Y16, Y0, Y0
	VADDPS       Y17, Y1, Y1
	VADDPS       Y18, Y2, Y2
	VADDPS       Y19, Y3, Y3
	VADDPS       Y20, Y4, Y4
	VADDPS       Y21, Y5, Y5
	VADDPS       Y22, Y6, Y6
	VADDPS       Y23, Y7, Y7
	MOVQ         out+32(FP), AX
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $0x01, Y0, X1
	VADDPS       X1, X0, X1
	VMOVUPS      X1, (AX)
	VHADDPS      Y5, Y4, Y4
	VHADDPS      Y7, Y6, Y6
	VHADDPS      Y6, Y4, Y4
	VEXTRACTF128 $0x01, Y4, X5
	VADDPS       X5, X4, X5
	VMOVUPS      X5, 16(AX)
	VZEROUPPER
	RET
