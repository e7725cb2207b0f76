// This file generates the AVX2 decode kernels for Q4_0 and Q8_0: rows read front to back
// (q8_0Rows) and the Q4_0 row-pair kernels (q4_0Pairs4x1/8x1).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genQ4Pairs emits a decode (one token) Q4_0 kernel over 2*pairs rows that packs two rows into
// each 256-bit register: [row r nibbles | row r+1 nibbles], multiplied against the token's
// block halves broadcast to both 128-bit lanes. Per row pair and block this needs one
// VPMADDWD and one float conversion instead of two. Lanes 0..3 of a pair accumulator belong
// to row r, lanes 4..7 to row r+1; lane j holds elements 4j..4j+3 and 16+4j..16+4j+3.
func genQ4Pairs(pairs int) {
	R := 2 * pairs
	name := fmt.Sprintf("q4_0Pairs%dx1", R)
	TEXT(name, NOSPLIT, "func(w *byte, wstride int, xq *int8, xstride int, xd *float32, corr *int32, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes %d rows x 1 token of a q4_0 matmul, two rows per register (see genQ4Pairs).", name, R))
	Pragma("noescape")
	wp := Load(Param("w"), GP64())
	ws := Load(Param("wstride"), GP64())
	xp := Load(Param("xq"), GP64())
	dp := Load(Param("xd"), GP64())
	cp := Load(Param("corr"), GP64())
	n := Load(Param("nb"), GP64())
	ws3 := GP64()
	LEAQ(Mem{Base: ws, Index: ws, Scale: 2}, ws3)
	var wp4 GPVirtual
	if R > 4 {
		wp4 = GP64()
		LEAQ(Mem{Base: wp, Index: ws, Scale: 4}, wp4)
	}
	wrow := func(r int) Mem {
		base := wp
		if r >= 4 {
			base, r = wp4, r-4
		}
		return strided(base, ws, ws3, r)
	}
	acc := make([]VecVirtual, pairs)
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	ones := YMM()
	VMOVDQU(ones16, ones)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	xlo, xhi, dx, cv := YMM(), YMM(), YMM(), YMM()
	VBROADCASTI128(Mem{Base: xp}, xlo)
	VBROADCASTI128(Mem{Base: xp, Disp: 16}, xhi)
	VBROADCASTSS(Mem{Base: dp}, dx)
	VPBROADCASTD(Mem{Base: cp}, cv)
	VPAND(lane04, cv, cv)
	for i := 0; i < pairs; i++ {
		ra, rb := wrow(2*i), wrow(2*i+1)
		if prefetchAheadQ4 > 0 {
			PREFETCHT0(ra.Offset(prefetchAheadQ4))
			PREFETCHT0(rb.Offset(prefetchAheadQ4))
		}
		q, hi, p := YMM(), YMM(), YMM()
		VMOVDQU(ra.Offset(2), q.AsX())
		VINSERTI128(Imm(1), rb.Offset(2), q, q)
		VPSRLW(Imm(4), q, hi)
		VPAND(mask0F, q, q)
		VPAND(mask0F, hi, hi)
		VPMADDUBSW(xlo, q, p)
		VPMADDUBSW(xhi, hi, hi)
		VPADDW(hi, p, p)
		VPMADDWD(ones, p, p)
		VPADDD(cv, p, p)
		VCVTDQ2PS(p, p)
		s, s2 := XMM(), XMM()
		VPBROADCASTW(ra, s)
		VPBROADCASTW(rb, s2)
		VPBLENDD(Imm(0xc), s2, s, s)
		VCVTPH2PS(s, s.AsY())
		VMULPS(s.AsY(), p, p)
		VFMADD231PS(dx, p, acc[i])
	}
	ADDQ(Imm(18), wp)
	if R > 4 {
		ADDQ(Imm(18), wp4)
	}
	ADDQ(Imm(32), xp)
	ADDQ(Imm(4), dp)
	ADDQ(Imm(32), cp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	op := Load(Param("out"), GP64())
	for i := 0; i < pairs; i++ {
		t := XMM()
		VEXTRACTF128(Imm(1), acc[i], t)
		VHADDPS(t, acc[i].AsX(), acc[i].AsX()) // [a0+a1, a2+a3, b0+b1, b2+b3]
		VHADDPS(acc[i].AsX(), acc[i].AsX(), acc[i].AsX())
		VMOVSS(acc[i].AsX(), Mem{Base: op, Disp: 8 * i})
		VEXTRACTPS(Imm(1), acc[i].AsX(), Mem{Base: op, Disp: 8*i + 4})
	}
	VZEROUPPER()
	RET()
}

// q8Block emits one Q8_0 block (weight at wm, token block at xm, token scale at dm) into acc.
func q8Block(wm, xm, dm Mem, ones, acc VecVirtual) {
	a, p, dw := YMM(), YMM(), YMM()
	VPABSB(wm.Offset(2), a)
	VMOVDQU(xm, p)
	VPSIGNB(wm.Offset(2), p, p)
	VPMADDUBSW(p, a, p)
	VPMADDWD(ones, p, p)
	VCVTDQ2PS(p, p)
	VPBROADCASTW(wm, dw.AsX())
	VCVTPH2PS(dw.AsX(), dw)
	VMULPS(dw, p, p)
	VBROADCASTSS(dm, dw)
	VFMADD231PS(dw, p, acc)
}

// genQ8Rows emits the sequential Q8_0 decode kernel: nrows consecutive rows (rs bytes apart),
// each read front to back, two blocks per iteration into two accumulators (same math and
// lane order per block as genTile; the two accumulators are added before the final sum).
func genQ8Rows() {
	TEXT("q8_0Rows", NOSPLIT, "func(w *byte, rs int, nrows int, xq *int8, xd *float32, nb int, out *float32)")
	Doc("q8_0Rows computes nrows consecutive Q8_0 rows against one token (see genQ8Rows).")
	Pragma("noescape")
	wrow := Load(Param("w"), GP64())
	rs := Load(Param("rs"), GP64())
	nr := Load(Param("nrows"), GP64())
	op := Load(Param("out"), GP64())
	ones := YMM()
	VMOVDQU(ones16, ones)
	TESTQ(nr, nr)
	JZ(LabelRef("q8r_done"))
	Label("q8r_row")
	wp := GP64()
	MOVQ(wrow, wp)
	xp := Load(Param("xq"), GP64())
	dp := Load(Param("xd"), GP64())
	n := Load(Param("nb"), GP64())
	acc0, acc1 := YMM(), YMM()
	VXORPS(acc0, acc0, acc0)
	VXORPS(acc1, acc1, acc1)
	CMPQ(n, Imm(2))
	JL(LabelRef("q8r_tail"))
	Label("q8r_loop")
	PREFETCHT0(Mem{Base: wp, Disp: prefetchAhead})
	q8Block(Mem{Base: wp}, Mem{Base: xp}, Mem{Base: dp}, ones, acc0)
	PREFETCHT0(Mem{Base: wp, Disp: prefetchAhead + 34})
	q8Block(Mem{Base: wp, Disp: 34}, Mem{Base: xp, Disp: 32}, Mem{Base: dp, Disp: 4}, ones, acc1)
	ADDQ(Imm(68), wp)
	ADDQ(Imm(64), xp)
	ADDQ(Imm(8), dp)
	SUBQ(Imm(2), n)
	CMPQ(n, Imm(2))
	JGE(LabelRef("q8r_loop"))
	Label("q8r_tail")
	TESTQ(n, n)
	JZ(LabelRef("q8r_end"))
	q8Block(Mem{Base: wp}, Mem{Base: xp}, Mem{Base: dp}, ones, acc0)
	Label("q8r_end")
	VADDPS(acc1, acc0, acc0)
	t := YMM()
	hsum(acc0, t)
	VMOVSS(acc0.AsX(), Mem{Base: op})
	ADDQ(Imm(4), op)
	ADDQ(rs, wrow)
	DECQ(nr)
	JNZ(LabelRef("q8r_row"))
	Label("q8r_done")
	VZEROUPPER()
	RET()
}
