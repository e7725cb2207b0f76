// This file generates q8_0Rows4A and q4_0Rows4A, the AVX2 (no VNNI) Q8_0 and Q4_0 decode
// kernels that read four weight streams: row group i is rows w[j] + i·adv (j = 0..3), each
// against one token, results stored at out[j] + i·oadv bytes. As for the VNNI four-stream
// kernels (vnni_rows4p.go), the four w[j] are a quarter of a worker's share apart so that
// each stream is one long sequential read the hardware prefetcher follows by itself. The
// token's loads are shared by the four rows, and so is the float work of a block pair: the
// four rows' integer lanes are summed and transposed into one register (fold4) before the
// conversion, the scaling by the rows' fp16 scales (rowScales) and the FMA with the token's.
// A row's lanes never mix with another row's, so its result does not depend on the other
// rows of its group (kernels/quant_streams_avx2.go pads a lone row with copies of itself).
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genRows4A emits q8_0Rows4A or, with q4, q4_0Rows4A (see the file comment).
func genRows4A(q4 bool) {
	const R = 4
	name := "q8_0Rows4A"
	sig := "func(w **byte, adv int, nrows int, xq *int8, d2 *float32, npairs int, out **float32, oadv int)"
	if q4 {
		name = "q4_0Rows4A"
		sig = "func(w **byte, adv int, nrows int, x2 *int8, d2 *float32, c2 *int32, npairs int, out **float32, oadv int)"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " computes nrows row groups of four rows, row j of group i at w[j] + i·adv, against one token with AVX2, storing row j's result at out[j] + i·oadv bytes (see genRows4A).")
	Pragma("noescape")
	wa := Load(Param("w"), GP64())
	var bases [R]GPVirtual
	for j := range bases {
		bases[j] = GP64()
		MOVQ(Mem{Base: wa, Disp: 8 * j}, bases[j])
	}
	nr := Load(Param("nrows"), GP64())
	o := GP64()
	XORQ(o, o)
	ones := YMM()
	VMOVDQU(ones16, ones)
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_rows")
	off := GP64()
	XORQ(off, off)
	wm := func(r, disp int) Mem { return Mem{Base: bases[r], Index: off, Scale: 1, Disp: disp} }
	if q4 {
		acc := q4Rows4ABody(name, wm, off, ones)
		oa := Load(Param("out"), GP64())
		p := GP64()
		for r := 0; r < R; r++ {
			MOVQ(Mem{Base: oa, Disp: 8 * r}, p)
			VEXTRACTPS(Imm(uint64(r)), acc.AsX(), Mem{Base: p, Index: o, Scale: 1})
		}
	} else {
		acc := q8Rows4ABody(name, wm, off, ones)
		oa := Load(Param("out"), GP64())
		p := GP64()
		for r := 0; r < R; r++ {
			MOVQ(Mem{Base: oa, Disp: 8 * r}, p)
			VEXTRACTPS(Imm(uint64(r)), acc.AsX(), Mem{Base: p, Index: o, Scale: 1})
		}
	}
	ADDQ(paramAddr("oadv"), o)
	for r := 0; r < R; r++ {
		ADDQ(paramAddr("adv"), bases[r])
	}
	DECQ(nr)
	JNZ(LabelRef(name + "_rows"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// q8Rows4ABody emits one row group of q8_0Rows4A, two blocks (2i, 2i+1) per step: each row's
// block gives 8 int32 lanes (VPABSB/VPSIGNB/VPMADDUBSW/VPMADDWD, the token block loaded once
// for the four rows), the four rows' lanes are summed and transposed (fold4) into [r0..r3 |
// r0..r3] partial sums, the two blocks' halves combined into h = [r0..r3 sums of block 2i |
// the same of 2i+1], and the float work is done once for the four rows as in q4Rows4ABody
// (the token scales from d2, the pair layout's). Row r's result is lane r + lane 4+r.
func q8Rows4ABody(name string, wm func(r, disp int) Mem, off GPVirtual, ones VecVirtual) VecVirtual {
	const R = 4
	xp := Load(Param("xq"), GP64())
	dp := Load(Param("d2"), GP64())
	n := Load(Param("npairs"), GP64())
	acc := YMM()
	VXORPS(acc, acc, acc)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	var hs [2]VecVirtual
	for e := 0; e < 2; e++ {
		x := YMM()
		VMOVDQU(Mem{Base: xp, Disp: 32 * e}, x)
		var ps [R]VecVirtual
		for r := 0; r < R; r++ {
			m := wm(r, 34*e)
			a, p := YMM(), YMM()
			VPABSB(m.Offset(2), a)
			VPSIGNB(m.Offset(2), x, p)
			VPMADDUBSW(p, a, p)
			VPMADDWD(ones, p, p)
			ps[r] = p
		}
		hs[e] = fold4(ps)
	}
	h, t := YMM(), YMM()
	VPERM2I128(Imm(0x20), hs[1], hs[0], h) // [h0 low | h1 low]
	VPERM2I128(Imm(0x31), hs[1], hs[0], t) // [h0 high | h1 high]
	VPADDD(t, h, h)
	VCVTDQ2PS(h, h)
	sy := rowScales(wm, 34)
	VMULPS(sy, h, h)
	VFMADD231PS(Mem{Base: dp}, h, acc)
	ADDQ(Imm(68), off)
	ADDQ(Imm(64), xp)
	ADDQ(Imm(32), dp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	hi := XMM()
	VEXTRACTF128(Imm(1), acc, hi)
	VADDPS(hi, acc.AsX(), acc.AsX())
	return acc
}

// fold4 sums and transposes four rows' int32 lanes within each 128-bit half: the result's
// lane r (and 4+r) is the sum of lanes 0..3 (4..7) of ps[r]. It clobbers ps.
func fold4(ps [4]VecVirtual) VecVirtual {
	t0, t1 := YMM(), YMM()
	VPUNPCKLDQ(ps[1], ps[0], t0) // [p0_0 p1_0 p0_1 p1_1]
	VPUNPCKHDQ(ps[1], ps[0], t1) // [p0_2 p1_2 p0_3 p1_3]
	VPADDD(t1, t0, t0)           // [p0_02 p1_02 p0_13 p1_13]
	VPUNPCKLDQ(ps[3], ps[2], t1)
	VPUNPCKHDQ(ps[3], ps[2], ps[2])
	VPADDD(ps[2], t1, t1) // [p2_02 p3_02 p2_13 p3_13]
	VPUNPCKLQDQ(t1, t0, ps[0])
	VPUNPCKHQDQ(t1, t0, ps[1])
	VPADDD(ps[1], ps[0], ps[0]) // [r0 r1 r2 r3]
	return ps[0]
}

// rowScales emits the four rows' fp16 scales of a block pair (at row offsets 0 and bd), read
// through a GP register, as 8 floats [r0..r3 of the first block | r0..r3 of the second].
func rowScales(wm func(r, disp int) Mem, bd int) VecVirtual {
	g, t := GP64(), GP64()
	sx := XMM()
	for e := 0; e < 2; e++ {
		MOVWQZX(wm(0, bd*e), g)
		for r := 1; r < 4; r++ {
			MOVWQZX(wm(r, bd*e), t)
			SHLQ(Imm(uint64(16*r)), t)
			ORQ(t, g)
		}
		if e == 0 {
			VMOVQ(g, sx)
		} else {
			VPINSRQ(Imm(1), g, sx, sx)
		}
	}
	sy := YMM()
	VCVTPH2PS(sx, sy)
	return sy
}

// q4Rows4ABody emits one row group of q4_0Rows4A. Per block pair each row's nibbles give 8
// int32 lanes in block-pair order ([block 2i: 4 lanes | block 2i+1: 4 lanes]); the four rows' lanes
// are then summed and transposed into one register, h = [r0 r1 r2 r3 sums of block 2i |
// the same of block 2i+1], so the float work is done once for the four rows: h + corrections,
// conversion, times the rows' fp16 scales (gathered through a GP register into one xmm and
// converted at once), FMA with the token scales (d2) into one accumulator. Row r's result is
// lane r + lane 4+r of it at the end.
func q4Rows4ABody(name string, wm func(r, disp int) Mem, off GPVirtual, ones VecVirtual) VecVirtual {
	const R = 4
	xp := Load(Param("x2"), GP64())
	dp := Load(Param("d2"), GP64())
	cp := Load(Param("c2"), GP64())
	n := Load(Param("npairs"), GP64())
	acc := YMM()
	VXORPS(acc, acc, acc)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	xlo, xhi := YMM(), YMM()
	VMOVDQU(Mem{Base: xp}, xlo)
	VMOVDQU(Mem{Base: xp, Disp: 32}, xhi)
	var ps [R]VecVirtual
	for r := 0; r < R; r++ {
		m := wm(r, 0)
		q, hi, p := YMM(), YMM(), YMM()
		VMOVDQU(m.Offset(2), q.AsX())
		VINSERTI128(Imm(1), m.Offset(20), q, q)
		VPSRLW(Imm(4), q, hi)
		VPAND(mask0F, q, q)
		VPAND(mask0F, hi, hi)
		VPMADDUBSW(xlo, q, p)
		VPMADDUBSW(xhi, hi, hi)
		VPADDW(hi, p, p)
		VPMADDWD(ones, p, p)
		ps[r] = p
	}
	h := fold4(ps)
	c := YMM()
	VPSHUFD(Imm(0), Mem{Base: cp}, c) // [c_2i x4 | c_2i+1 x4]
	VPADDD(c, h, h)
	VCVTDQ2PS(h, h)
	sy := rowScales(wm, 18)
	VMULPS(sy, h, h)
	VFMADD231PS(Mem{Base: dp}, h, acc)
	ADDQ(Imm(36), off)
	ADDQ(Imm(64), xp)
	ADDQ(Imm(32), dp)
	ADDQ(Imm(32), cp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	hi := XMM()
	VEXTRACTF128(Imm(1), acc, hi)
	VADDPS(hi, acc.AsX(), acc.AsX())
	return acc
}
