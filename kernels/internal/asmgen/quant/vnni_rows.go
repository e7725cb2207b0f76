// This file generates the AVX-512 VNNI decode (one token) kernels for Q8_0 and Q4_0: nrows
// consecutive weight rows, each read front to back, as the AVX2 q8_0Rows does, with the
// math of genTileZ (unsigned weights, VPDPBUSD, corrections in the accumulator's start value).
//
// A unit is what one 512-bit register holds: for Q8_0 a block pair (68 weight bytes, the lane
// layout of genTileZ), for Q4_0 a block quad (72 bytes): the 4 x 16 nibble bytes of blocks
// b..b+3 side by side, low nibbles in one register and high nibbles in another, both
// accumulated into the same lanes, so lanes 4i..4i+3 belong to block b+i. The token comes in
// the matching order (Q4_0: x_b[0:16] x_b1[0:16] x_b2[0:16] x_b3[0:16], then the [16:32]
// halves), with 16 lane scales and 16 lane corrections per unit. The 2 or 4 fp16 weight scales
// of a unit are gathered into lane order with one VPERMW from the unit's raw bytes.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var permQ8Z, permQ4Z Mem // VPERMW indexes of the unit's scales: Q8_0 words 0, 17; Q4_0 0, 9, 18, 27

func constsZ() {
	permQ8Z = GLOBL("q_permq8z", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(2*i, U16(uint16(17*((i/8)%2))))
	}
	permQ4Z = GLOBL("q_permq4z", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(2*i, U16(uint16(9*((i/4)%4))))
	}
}

// zUnit emits one unit of row at wm against the token unit at xm (scales dm, corrections cm)
// into acc. c holds the byte constant (0x80 or 0x0f), pidx the VPERMW index; t0..t3 temporaries.
func zUnit(q4 bool, wm, xm, dm, cm Mem, c, pidx, acc, t0, t1, t2, t3 VecPhysical) {
	p := t2
	VMOVDQU64(cm, p)
	if q4 {
		VMOVDQU64(wm.Offset(2), t0.AsX())
		VINSERTI32X4(Imm(1), wm.Offset(20), t0.AsY(), t0.AsY())
		VINSERTI32X4(Imm(2), wm.Offset(38), t0, t0)
		VINSERTI32X4(Imm(3), wm.Offset(56), t0, t0)
		VPSRLW(Imm(4), t0, t1)
		VPANDD(c, t0, t0)
		VPANDD(c, t1, t1)
		VPDPBUSD(xm, t0, p)
		VPDPBUSD(xm.Offset(64), t1, p)
	} else {
		VMOVDQU64(wm.Offset(2), t0.AsY())
		VINSERTI64X4(Imm(1), wm.Offset(36), t0, t0)
		VPXORD(c, t0, t0)
		VPDPBUSD(xm, t0, p)
	}
	VCVTDQ2PS(p, p)
	VPERMW(wm, pidx, t3)
	VCVTPH2PS(t3.AsY(), t3)
	VMULPS(t3, p, p)
	VFMADD231PS(dm, p, acc)
}

// genRowsZ emits q8_0RowsZ / q4_0RowsZ: nrows rows (rs bytes apart) x one token, nu units per
// row, two units per iteration into two accumulators (summed before the final reduction).
func genRowsZ(q4 bool) {
	name, ub, xb := "q8_0RowsZ", 68, 64
	if q4 {
		name, ub, xb = "q4_0RowsZ", 72, 128
	}
	TEXT(name, NOSPLIT, "func(w *byte, rs int, nrows int, xs *int8, xd *float32, corr *int32, nunits int, out *float32)")
	Doc(name + " computes nrows consecutive rows against one token with AVX-512 VNNI (see genRowsZ).")
	Pragma("noescape")
	wrow := Load(Param("w"), GP64())
	rs := Load(Param("rs"), GP64())
	nr := Load(Param("nrows"), GP64())
	op := Load(Param("out"), GP64())
	c, pidx := Z2, Z3
	zConsts(q4, c, pidx)
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_row")
	wp := GP64()
	MOVQ(wrow, wp)
	xp, dp, cp, n := tokenArgsZ()
	acc0, acc1 := Z0, Z1
	VPXORD(acc0, acc0, acc0)
	VPXORD(acc1, acc1, acc1)
	unitPairs(name, n, wp, xp, dp, cp, ub, xb, func(off, e int) {
		acc, t := acc0, 4
		if e == 1 {
			acc, t = acc1, 8
		}
		zUnit(q4, Mem{Base: wp, Disp: off}, Mem{Base: xp, Disp: xb * e}, Mem{Base: dp, Disp: 64 * e}, Mem{Base: cp, Disp: 64 * e},
			c, pidx, acc, zreg(t), zreg(t+1), zreg(t+2), zreg(t+3))
	}, func() {
		if prefetchAhead > 0 {
			PREFETCHT0(Mem{Base: wp, Disp: prefetchAhead})
			PREFETCHT0(Mem{Base: wp, Disp: prefetchAhead + 64})
			if q4 {
				PREFETCHT0(Mem{Base: wp, Disp: prefetchAhead + 128})
			}
		}
	})
	VADDPS(acc1, acc0, acc0)
	hsum16(acc0, Z4)
	VMOVSS(acc0.AsX(), Mem{Base: op})
	ADDQ(Imm(4), op)
	ADDQ(rs, wrow)
	DECQ(nr)
	JNZ(LabelRef(name + "_row"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// tokenArgsZ loads the token arguments of the VNNI decode kernels (values, lane scales, lane
// corrections, unit count) into fresh registers, at the start of each row or row group.
func tokenArgsZ() (xp, dp, cp, n Register) {
	return Load(Param("xs"), GP64()), Load(Param("xd"), GP64()), Load(Param("corr"), GP64()), Load(Param("nunits"), GP64())
}

// zConsts loads the VNNI decode kernels' constants: c the byte constant (Q4_0: 0x0f, the nibble
// mask; Q8_0: 0x80, the sign flip) and pidx the VPERMW index of a unit's scales.
func zConsts(q4 bool, c, pidx VecPhysical) {
	if q4 {
		VPBROADCASTD(mask0F, c)
		VMOVDQU64(permQ4Z, pidx)
	} else {
		VPBROADCASTD(mask80, c)
		VMOVDQU64(permQ8Z, pidx)
	}
}
