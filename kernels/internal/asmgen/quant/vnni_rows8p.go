// This file generates q8_0Rows8P and q4_0Rows8P, the eight-stream twins of q8_0Rows4P and
// q4_0Rows4P (and q4_0Rows4P itself, the same code for four rows): row group i is rows w[j] + i·adv for j = 0..7, so that a decode worker reads
// eight weight streams side by side. On the Sapphire Rapids class VM one core streams more the
// more streams it reads at once (a plain sum: 8.2 GB/s from one stream, 10.7 from four, 12.0
// from eight; docs/kernels-float.md), and the four-stream kernels stop at four.
//
// Registers: eight rows with two accumulators each (unit parity, the order of rows4Unit and
// zUnit, so a row's sum is bit for bit the four-row and one-row kernels') take Z0..Z15; the
// byte constant and the VPERMW index Z16, Z17; the token's unit lives in registers and serves
// the eight rows (Q8_0: values, float corrections, lane scales in Z18..Z20 for even units and
// Z21..Z23 for odd ones; Q4_0: low and high values, lane scales, corrections in Z18..Z21, one
// parity at a time); the rows' temporaries rotate over the rest (register renaming makes the
// reuse free: each row's chain is independent). GP registers: eight row bases, the unit
// offset, three token pointers, the unit count and the group count are fourteen, so the
// results' offset lives in a stack slot.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genRows8P emits q8_0Rows8P (rows4Unit's per-row math) or, with q4, q4_0Rows8P (zUnit's).
func genRows8P(q4 bool) { genRowsRP(q4, 8, "Rows8P", "eight", 0) }

// genQ4Rows4P emits q4_0Rows4P, the four-stream Q4_0 kernel, as genRowsRP's: the token's unit
// loaded once into registers for the four rows (until 4 Dec 2026 it was loaded again for every
// row; per CPU-second on the AMD Zen 5 VM the register version is 1.13x in L1 and 1.02-1.03x
// from DRAM, with the same sums bit for bit). q8_0Rows4P keeps genRows4P's body: its
// register version measured 0.995-1.01x.
func genQ4Rows4P() { genRowsRP(true, 4, "Rows4P", "four", prefetchQ4Rows4P) }

// prefetchQ4Rows4P is how far ahead of each stream q4_0Rows4P prefetches (PREFETCHNTA, every
// line of each unit pair; the eight-stream kernels do not). Measured on the Zen 5 VM as
// q8_0Rows4P's (BenchmarkDecodeModes' method on 5632x2048 Q4_0, 11 runs of 40 turns, two of
// them with turns above 65 GB/s, 5 Dec 2026): 2048 bytes ahead read 13-15% more than none
// above 65 GB/s, 9-17% more at 58-62 and 2-5% more at 45-50.
const prefetchQ4Rows4P = 2048

// genRowsRP emits the R-stream kernel (R = 4 or 8) named q8_0+suffix, or q4_0+suffix with q4.
func genRowsRP(q4 bool, R int, suffix, count string, prefetch int) {
	name, ub, xb, corr, corrType := "q8_0"+suffix, 68, 64, "fz", "*float32"
	if q4 {
		name, ub, xb, corr, corrType = "q4_0"+suffix, 72, 128, "corr", "*int32"
	}
	TEXT(name, NOSPLIT, "func(w **byte, adv int, nrows int, xs *int8, xd *float32, "+corr+" "+corrType+", nunits int, out **float32, oadv int)")
	Doc(name + " computes nrows row groups of " + count + " rows, row j of group i at w[j] + i·adv, against one token with AVX-512 VNNI, storing row j's result at out[j] + i·oadv bytes (see genRowsRP).")
	Pragma("noescape")
	oslot, bases, nr, off := streamsPrologue(R)
	c, pidx := Z16, Z17
	zConsts(q4, c, pidx)
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_rows")
	XORQ(off, off)
	xp, dp, cp, n := Load(Param("xs"), GP64()), Load(Param("xd"), GP64()), Load(Param(corr), GP64()), Load(Param("nunits"), GP64())
	for i := 0; i < 2*R; i++ {
		VPXORD(zreg(i), zreg(i), zreg(i))
	}
	rowMem := func(r, disp int) Mem { return Mem{Base: bases[r], Index: off, Scale: 1, Disp: disp} }
	unitPairs(name, n, off, xp, dp, cp, ub, xb, func(disp, e int) {
		if q4 {
			rows8UnitQ4(R, e, func(r int) Mem { return rowMem(r, disp) }, Mem{Base: xp, Disp: xb * e}, Mem{Base: dp, Disp: 64 * e}, Mem{Base: cp, Disp: 64 * e}, c, pidx)
			return
		}
		rows8UnitQ8(R, e, func(r int) Mem { return rowMem(r, disp) }, Mem{Base: xp}, Mem{Base: dp}, Mem{Base: cp}, c, pidx)
	}, func() { streamsPrefetch(R, rowMem, prefetch, "PREFETCHNTA", 2*ub) })
	// The token pointers are free until the next group: xp holds the result pointers, dp the
	// results' offset, cp one result's address.
	oa := Load(Param("out"), xp)
	MOVQ(oslot, dp)
	for r := 0; r < R; r++ {
		a := zreg(2 * r)
		VADDPS(zreg(2*r+1), a, a)
		hsum16(a, zreg(24+r%8))
		MOVQ(Mem{Base: oa, Disp: 8 * r}, cp)
		VMOVSS(a.AsX(), Mem{Base: cp, Index: dp, Scale: 1})
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

// rows8UnitQ8 is rows4Unit for eight rows: the token unit e (values, float corrections, lane
// scales at xm, cm, dm + 64·e) in Z18+3e..Z20+3e, row r's temporaries Z24+3(r%2)..Z26+3(r%2),
// accumulators Z(2r+e). The per-row instructions and their order are rows4Unit's.
func rows8UnitQ8(R, e int, rowMem func(r int) Mem, xm, dm, cm Mem, c, pidx VecPhysical) {
	xv, cv, dv := zreg(18+3*e), zreg(19+3*e), zreg(20+3*e)
	VMOVDQU64(xm.Offset(64*e), xv)
	VMOVDQU64(cm.Offset(64*e), cv)
	VMOVDQU64(dm.Offset(64*e), dv)
	for r := 0; r < R; r++ {
		t := 24 + 3*(r%2)
		wv, p, s := zreg(t), zreg(t+1), zreg(t+2)
		wm := rowMem(r)
		VMOVDQU64(wm.Offset(2), wv.AsY())
		VINSERTI64X4(Imm(1), wm.Offset(36), wv, wv)
		VPXORD(c, wv, wv)
		VPXORD(p, p, p)
		VPDPBUSD(xv, wv, p)
		VCVTDQ2PS(p, p)
		VFMADD213PS(cv, dv, p) // p = p·dx + float(corr)·dx
		VPERMW(wm, pidx, s)
		VCVTPH2PS(s.AsY(), s)
		VFMADD231PS(s, p, zreg(2*r+e))
	}
}

// rows8UnitQ4 is zUnit (Q4_0) for eight rows with the token unit in registers: low and high
// values, lane scales and corrections in Z18..Z21, row r's temporaries Z22+4(r%2)..Z25+4(r%2),
// accumulators Z(2r+e). The per-row operations and their order are zUnit's, so the sums are.
func rows8UnitQ4(R, e int, rowMem func(r int) Mem, xm, dm, cm Mem, c, pidx VecPhysical) {
	xlo, xhi, dv, cv := Z18, Z19, Z20, Z21
	VMOVDQU64(xm, xlo)
	VMOVDQU64(xm.Offset(64), xhi)
	VMOVDQU64(dm, dv)
	VMOVDQU64(cm, cv)
	for r := 0; r < R; r++ {
		t := 22 + 4*(r%2)
		t0, t1, p, t3 := zreg(t), zreg(t+1), zreg(t+2), zreg(t+3)
		wm := rowMem(r)
		VMOVDQA64(cv, p)
		VMOVDQU64(wm.Offset(2), t0.AsX())
		VINSERTI32X4(Imm(1), wm.Offset(20), t0.AsY(), t0.AsY())
		VINSERTI32X4(Imm(2), wm.Offset(38), t0, t0)
		VINSERTI32X4(Imm(3), wm.Offset(56), t0, t0)
		VPSRLW(Imm(4), t0, t1)
		VPANDD(c, t0, t0)
		VPANDD(c, t1, t1)
		VPDPBUSD(xlo, t0, p)
		VPDPBUSD(xhi, t1, p)
		VCVTDQ2PS(p, p)
		VPERMW(wm, pidx, t3)
		VCVTPH2PS(t3.AsY(), t3)
		VMULPS(t3, p, p)
		VFMADD231PS(dv, p, zreg(2*r+e))
	}
}

// streamsPrologue starts a multi-stream kernel with the w, nrows parameters of
// genRowsRP: an 8-byte stack slot for the results' offset (zeroed), the R row pointers loaded
// from w, the group count, and the register of the unit offset.
func streamsPrologue(R int) (oslot Mem, bases []GPVirtual, nr, off Register) {
	oslot = AllocLocal(8)
	wa := Load(Param("w"), GP64())
	bases = make([]GPVirtual, R)
	for j := range bases {
		bases[j] = GP64()
		MOVQ(Mem{Base: wa, Disp: 8 * j}, bases[j])
	}
	nr = Load(Param("nrows"), GP64())
	MOVQ(U32(0), oslot)
	return oslot, bases, nr, GP64()
}
