// This file generates q8_0Rows4T2 and q4_0Rows4T2: the four-stream decode kernels
// (q8_0Rows8P's and q4_0Rows4P's per-row math, genRowsRP) against two tokens at once, so that a
// step of two sequences (or a speculative verification of two rows) reads each weight row
// once, where the one-token kernel called per token reads it twice. Every (row, token) sum is
// the one-token kernel's bit for bit: the same instructions in the same order per unit and
// the same two accumulators per unit parity.
//
// Registers (Q4_0): the accumulators of row r, token t, parity e in Z(4r+2t+e) (Z0..Z15), the
// byte constant and the VPERMW index Z16, Z17, both tokens' low and high values Z18..Z21 (one
// parity at a time), each row's temporaries (weights low and high, scales, the two tokens'
// lanes) rotating over two sets in Z22..Z31; the lane corrections and scales of the tokens
// are memory operands. Q8_0: the tokens' values and lane scales in Z18..Z21, the float
// corrections memory operands, a row's temporaries (weights, scales, two lanes) in two sets
// over Z22..Z29.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genRows4T2 emits q8_0Rows4T2, or q4_0Rows4T2 with q4.
func genRows4T2(q4 bool) {
	const R, T = 4, 2
	name, ub, xb, corr, corrType := "q8_0Rows4T2", 68, 64, "fz", "*float32"
	if q4 {
		name, ub, xb, corr, corrType = "q4_0Rows4T2", 72, 128, "corr", "*int32"
	}
	TEXT(name, NOSPLIT, "func(w **byte, adv int, nrows int, xs *int8, xd *float32, "+corr+" "+corrType+", tstride int, nunits int, out **float32, oadv int, ostride int)")
	Doc(name + " computes nrows row groups of four rows, row j of group i at w[j] + i·adv, against two tokens with AVX-512 VNNI (token 1's values at xs + tstride, its scales and corrections at xd and " + corr + " + tstride (Q8_0) or tstride/2 (Q4_0) bytes), storing row j's result for token t at out[j] + i·oadv + t·ostride bytes (see genRows4T2).")
	Pragma("noescape")
	oslot, bases, nr, off := streamsPrologue(R)
	c, pidx := Z16, Z17
	zConsts(q4, c, pidx)
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_rows")
	XORQ(off, off)
	xp, dp, cp := Load(Param("xs"), GP64()), Load(Param("xd"), GP64()), Load(Param(corr), GP64())
	xp1, dp1, cp1 := Load(Param("tstride"), GP64()), GP64(), GP64()
	MOVQ(xp1, dp1)
	if q4 {
		SHRQ(Imm(1), dp1)
	}
	MOVQ(dp1, cp1)
	ADDQ(xp, xp1)
	ADDQ(dp, dp1)
	ADDQ(cp, cp1)
	n := Load(Param("nunits"), GP64())
	for i := 0; i < 2*R*T; i++ {
		VPXORD(zreg(i), zreg(i), zreg(i))
	}
	rowMem := func(r, disp int) Mem { return Mem{Base: bases[r], Index: off, Scale: 1, Disp: disp} }
	xs, ds, cs := [T]Register{xp, xp1}, [T]Register{dp, dp1}, [T]Register{cp, cp1}
	unit := func(disp, e int) {
		if q4 {
			rowsT2UnitQ4(e, func(r int) Mem { return rowMem(r, disp) }, xs, ds, cs, xb, c, pidx)
			return
		}
		rowsT2UnitQ8(e, func(r int) Mem { return rowMem(r, disp) }, xs, ds, cs, c, pidx)
	}
	CMPQ(n, Imm(2))
	JL(LabelRef(name + "_tail"))
	Label(name + "_loop")
	unit(0, 0)
	unit(ub, 1)
	ADDQ(U32(2*ub), off)
	for t := 0; t < T; t++ {
		ADDQ(U32(2*xb), xs[t])
		ADDQ(Imm(128), ds[t])
		ADDQ(Imm(128), cs[t])
	}
	SUBQ(Imm(2), n)
	CMPQ(n, Imm(2))
	JGE(LabelRef(name + "_loop"))
	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	unit(0, 0)
	Label(name + "_end")
	tokensEpilogue(name, R, T, oslot, bases, nr, xp, dp, cp, xp1,
		func(r, t, e int) VecPhysical { return zreg(4*r + 2*t + e) }, func(t int) VecPhysical { return zreg(22 + t) })
}

// tokensEpilogue ends a group of a multi-token kernel and the kernel: each row's and token's two
// accumulators (acc) added, summed horizontally (with the temporary tmp(t)) and stored at
// out[r] + the results' offset (oslot) + t·ostride; the offset advanced by oadv and the row
// bases by adv; the next group, or the end. The token pointers xp, dp, cp, ts are free here:
// xp holds the result pointers, dp the results' offset, cp one result's address, ts ostride.
func tokensEpilogue(name string, R, T int, oslot Mem, bases []GPVirtual, nr, xp, dp, cp, ts Register, acc func(r, t, e int) VecPhysical, tmp func(t int) VecPhysical) {
	oa := Load(Param("out"), xp)
	MOVQ(oslot, dp)
	Load(Param("ostride"), ts)
	for r := 0; r < R; r++ {
		MOVQ(Mem{Base: oa, Disp: 8 * r}, cp)
		ADDQ(dp, cp)
		for t := 0; t < T; t++ {
			a := acc(r, t, 0)
			VADDPS(acc(r, t, 1), a, a)
			hsum16(a, tmp(t))
			VMOVSS(a.AsX(), Mem{Base: cp})
			if t+1 < T {
				ADDQ(ts, cp)
			}
		}
	}
	ADDQ(paramAddr("oadv"), dp)
	MOVQ(dp, oslot)
	for r := 0; r < R; r++ {
		ADDQ(paramAddr("adv"), bases[r])
	}
	DECQ(nr)
	JNZ(LabelRef(name + "_rows"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// rowsT2UnitQ4 is rows8UnitQ4 (zUnit's per-row operations in their order) for four rows and
// two tokens: unit parity e, token t's values at xs[t] + xb·e, lane scales and corrections at
// ds[t], cs[t] + 64·e.
func rowsT2UnitQ4(e int, rowMem func(r int) Mem, xs, ds, cs [2]Register, xb int, c, pidx VecPhysical) {
	xlo, xhi := [2]VecPhysical{Z18, Z20}, [2]VecPhysical{Z19, Z21}
	for t := 0; t < 2; t++ {
		VMOVDQU64(Mem{Base: xs[t], Disp: xb * e}, xlo[t])
		VMOVDQU64(Mem{Base: xs[t], Disp: xb*e + 64}, xhi[t])
	}
	for r := 0; r < 4; r++ {
		b := 22 + 5*(r%2)
		t0, t1, s := zreg(b), zreg(b+1), zreg(b+2)
		p := [2]VecPhysical{zreg(b + 3), zreg(b + 4)}
		wm := rowMem(r)
		for t := 0; t < 2; t++ {
			VMOVDQU64(Mem{Base: cs[t], Disp: 64 * e}, p[t])
		}
		VMOVDQU64(wm.Offset(2), t0.AsX())
		VINSERTI32X4(Imm(1), wm.Offset(20), t0.AsY(), t0.AsY())
		VINSERTI32X4(Imm(2), wm.Offset(38), t0, t0)
		VINSERTI32X4(Imm(3), wm.Offset(56), t0, t0)
		VPSRLW(Imm(4), t0, t1)
		VPANDD(c, t0, t0)
		VPANDD(c, t1, t1)
		for t := 0; t < 2; t++ {
			VPDPBUSD(xlo[t], t0, p[t])
			VPDPBUSD(xhi[t], t1, p[t])
			VCVTDQ2PS(p[t], p[t])
		}
		VPERMW(wm, pidx, s)
		VCVTPH2PS(s.AsY(), s)
		for t := 0; t < 2; t++ {
			VMULPS(s, p[t], p[t])
			VFMADD231PS(Mem{Base: ds[t], Disp: 64 * e}, p[t], zreg(4*r+2*t+e))
		}
	}
}

// rowsT2UnitQ8 is rows8UnitQ8 (rows4Unit's per-row operations in their order) for four rows
// and two tokens: unit parity e, token t's values, lane scales and float corrections at
// xs[t], ds[t], cs[t] + 64·e.
func rowsT2UnitQ8(e int, rowMem func(r int) Mem, xs, ds, cs [2]Register, c, pidx VecPhysical) {
	xv, dv := [2]VecPhysical{Z18, Z20}, [2]VecPhysical{Z19, Z21}
	for t := 0; t < 2; t++ {
		VMOVDQU64(Mem{Base: xs[t], Disp: 64 * e}, xv[t])
		VMOVDQU64(Mem{Base: ds[t], Disp: 64 * e}, dv[t])
	}
	for r := 0; r < 4; r++ {
		b := 22 + 4*(r%2)
		wv, s := zreg(b), zreg(b+1)
		p := [2]VecPhysical{zreg(b + 2), zreg(b + 3)}
		wm := rowMem(r)
		VMOVDQU64(wm.Offset(2), wv.AsY())
		VINSERTI64X4(Imm(1), wm.Offset(36), wv, wv)
		VPXORD(c, wv, wv)
		for t := 0; t < 2; t++ {
			VPXORD(p[t], p[t], p[t])
			VPDPBUSD(xv[t], wv, p[t])
			VCVTDQ2PS(p[t], p[t])
			VFMADD213PS(Mem{Base: cs[t], Disp: 64 * e}, dv[t], p[t]) // p = p·dx + float(corr)·dx
		}
		VPERMW(wm, pidx, s)
		VCVTPH2PS(s.AsY(), s)
		for t := 0; t < 2; t++ {
			VFMADD231PS(s, p[t], zreg(4*r+2*t+e))
		}
	}
}
