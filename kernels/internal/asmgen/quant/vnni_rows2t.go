// This file generates q8_0Rows2T1 ... q8_0Rows2T4 and q4_0Rows2T1 ... q4_0Rows2T4: genRows4T2's
// kernels for one to four tokens over two weight streams (the registers of four rows x four
// tokens x two parities do not fit four streams). Three and four tokens run alone; five to
// eight run as four plus one to four on the same rows, chunk by chunk (kernels/quant_decode2.go).
// Each (row, token) sum is the one-token kernel's bit for bit, as in genRows4T2.
//
// Registers: the accumulators of row r, token t, parity e in Z(2Tr+2t+e); the byte constant
// and the VPERMW index Z16, Z17; token t's values (Q4_0: low and high; Q8_0: values and lane
// scales) in Z18+2t, Z19+2t; from Z18+2T a row's weights and scales, then the tokens' lanes,
// as many registers as are left, reused in turn. Token t's arrays are at the token-0 pointer
// plus t times the stride (t = 3: a register holding three strides).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genRows2T emits q8_0Rows2T<T>, or q4_0Rows2T<T> with q4 (1 <= T <= 4).
func genRows2T(q4 bool, T int) {
	const R = 2
	name, ub, xb, corr, corrType := fmt.Sprintf("q8_0Rows2T%d", T), 68, 64, "fz", "*float32"
	if q4 {
		name, ub, xb, corr, corrType = fmt.Sprintf("q4_0Rows2T%d", T), 72, 128, "corr", "*int32"
	}
	TEXT(name, NOSPLIT, "func(w **byte, adv int, nrows int, xs *int8, xd *float32, "+corr+" "+corrType+", tstride int, nunits int, out **float32, oadv int, ostride int)")
	Doc(fmt.Sprintf("%s computes nrows row groups of two rows, row j of group i at w[j] + i·adv, against %d tokens with AVX-512 VNNI (token t's values at xs + t·tstride, its scales and corrections at xd and %s + t·tstride (Q8_0) or t·tstride/2 (Q4_0) bytes), storing row j's result for token t at out[j] + i·oadv + t·ostride bytes (see genRows2T).", name, T, corr))
	Pragma("noescape")
	oslot, bases, nr, off := streamsPrologue(R)
	c, pidx := Z16, Z17
	zConsts(q4, c, pidx)
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_rows")
	XORQ(off, off)
	xp, dp, cp := Load(Param("xs"), GP64()), Load(Param("xd"), GP64()), Load(Param(corr), GP64())
	ts := Load(Param("tstride"), GP64())
	tds := GP64()
	MOVQ(ts, tds)
	if q4 {
		SHRQ(Imm(1), tds)
	}
	var ts3, tds3 GPVirtual
	if T > 3 {
		ts3, tds3 = GP64(), GP64()
		LEAQ(Mem{Base: ts, Index: ts, Scale: 2}, ts3)
		LEAQ(Mem{Base: tds, Index: tds, Scale: 2}, tds3)
	}
	n := Load(Param("nunits"), GP64())
	// tok returns token t's address at base (the token-0 pointer), stride s (three strides: s3).
	tok := func(base, s, s3 Register, t, disp int) Mem {
		switch t {
		case 0:
			return Mem{Base: base, Disp: disp}
		case 1:
			return Mem{Base: base, Index: s, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: base, Index: s, Scale: 2, Disp: disp}
		}
		return Mem{Base: base, Index: s3, Scale: 1, Disp: disp}
	}
	for i := 0; i < 2*R*T; i++ {
		VPXORD(zreg(i), zreg(i), zreg(i))
	}
	rowMem := func(r, disp int) Mem { return Mem{Base: bases[r], Index: off, Scale: 1, Disp: disp} }
	acc := func(r, t, e int) VecPhysical { return zreg(2*T*r + 2*t + e) }
	free := 18 + 2*T
	unit := func(disp, e int) {
		xm := func(t, d int) Mem { return tok(xp, ts, ts3, t, d) }
		dm := func(t int) Mem { return tok(dp, tds, tds3, t, 64*e) }
		cm := func(t int) Mem { return tok(cp, tds, tds3, t, 64*e) }
		if q4 {
			for t := 0; t < T; t++ {
				VMOVDQU64(xm(t, xb*e), zreg(18+2*t))
				VMOVDQU64(xm(t, xb*e+64), zreg(19+2*t))
			}
			t0, t1, s := zreg(free), zreg(free+1), zreg(free+2)
			np := 32 - (free + 3)
			for r := 0; r < R; r++ {
				wm := rowMem(r, disp)
				VMOVDQU64(wm.Offset(2), t0.AsX())
				VINSERTI32X4(Imm(1), wm.Offset(20), t0.AsY(), t0.AsY())
				VINSERTI32X4(Imm(2), wm.Offset(38), t0, t0)
				VINSERTI32X4(Imm(3), wm.Offset(56), t0, t0)
				VPSRLW(Imm(4), t0, t1)
				VPANDD(c, t0, t0)
				VPANDD(c, t1, t1)
				VPERMW(wm, pidx, s)
				VCVTPH2PS(s.AsY(), s)
				for t := 0; t < T; t++ {
					p := zreg(free + 3 + t%np)
					VMOVDQU64(cm(t), p)
					VPDPBUSD(zreg(18+2*t), t0, p)
					VPDPBUSD(zreg(19+2*t), t1, p)
					VCVTDQ2PS(p, p)
					VMULPS(s, p, p)
					VFMADD231PS(dm(t), p, acc(r, t, e))
				}
			}
			return
		}
		for t := 0; t < T; t++ {
			VMOVDQU64(xm(t, 64*e), zreg(18+2*t))
			VMOVDQU64(dm(t), zreg(19+2*t))
		}
		wv, s := zreg(free), zreg(free+1)
		np := 32 - (free + 2)
		for r := 0; r < R; r++ {
			wm := rowMem(r, disp)
			VMOVDQU64(wm.Offset(2), wv.AsY())
			VINSERTI64X4(Imm(1), wm.Offset(36), wv, wv)
			VPXORD(c, wv, wv)
			VPERMW(wm, pidx, s)
			VCVTPH2PS(s.AsY(), s)
			for t := 0; t < T; t++ {
				p := zreg(free + 2 + t%np)
				VPXORD(p, p, p)
				VPDPBUSD(zreg(18+2*t), wv, p)
				VCVTDQ2PS(p, p)
				VFMADD213PS(cm(t), zreg(19+2*t), p) // p = p·dx + float(corr)·dx
				VFMADD231PS(s, p, acc(r, t, e))
			}
		}
	}
	unitPairs(name, n, off, xp, dp, cp, ub, xb, unit, func() {})
	tokensEpilogue(name, R, T, oslot, bases, nr, xp, dp, cp, ts, acc, func(int) VecPhysical { return zreg(free) })
}
