// This file generates q4_0Rows4PZ, the decode kernel of the zero-corrected Q4_0Z weights
// (Hugging Face AWQ / GPTQ 4-bit, repacked at load: tensor/groupzero.go) with the group zero
// folded into the integer dot product. A Q4_0Z row is Q4_0 blocks (scale d = the group's fp16
// scale s, codes q) plus, per 128-column unit (one block quad, inside one group), the code -z
// of the group's zero point, one signed byte. The weight is d·(q − z), so a unit's lane holds
//
//	Σ q·x + (−z)·Σx   (per block of the quad, in its first lane)
//
// where genRowsZ's Q4_0 kernel starts the lane from the token's −8·Σx. Here the token supplies
// Σx of each block (in the low 16 bits of the block's first lane, 0 elsewhere) and the lane
// starts from VPMADDWD(Σx words, −z broadcast as words): exact in int32 like the rest of the
// dot, so no float correction pass runs after the matmul. The rest of a unit is zUnit's math.
//
// Four weight streams as q4_0Rows4P, each one row after another (adv = the row's bytes), each
// with its own stream of codes (one byte per unit, rows after one another); the pointers walk
// their streams, so a row group needs no offsets. The token is one record per unit: 128 values
// (quad order), 16 lane scales (float32), 16 lane sums (int32): 256 bytes.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// zUnitZero is zUnit for a Q4_0Z unit: the lanes start from (−z)·Σx, −z the signed byte at
// zm, Σx the token's lane sums at sm.
func zUnitZero(wm, xm, dm, sm, zm Mem, c, pidx, acc, t0, t1, t2, t3 VecPhysical) {
	p := t2
	VPBROADCASTB(zm, p.AsY())
	VPMOVSXBW(p.AsY(), p)
	VPMADDWD(sm, p, p)
	VMOVDQU64(wm.Offset(2), t0.AsX())
	VINSERTI32X4(Imm(1), wm.Offset(20), t0.AsY(), t0.AsY())
	VINSERTI32X4(Imm(2), wm.Offset(38), t0, t0)
	VINSERTI32X4(Imm(3), wm.Offset(56), t0, t0)
	VPSRLW(Imm(4), t0, t1)
	VPANDD(c, t0, t0)
	VPANDD(c, t1, t1)
	VPDPBUSD(xm, t0, p)
	VPDPBUSD(xm.Offset(64), t1, p)
	VCVTDQ2PS(p, p)
	VPERMW(wm, pidx, t3)
	VCVTPH2PS(t3.AsY(), t3)
	VMULPS(t3, p, p)
	VFMADD231PS(dm, p, acc)
}

// genRows4PZ emits q4_0Rows4PZ (see the file comment).
func genRows4PZ() {
	const R, name = 4, "q4_0Rows4PZ"
	TEXT(name, NOSPLIT, "func(w **byte, z **int8, nrows int, rec *byte, nunits int, out **float32, oadv int)")
	Doc(name + " computes nrows row groups of four Q4_0Z rows (stream j: rows from w[j], their zero codes from z[j], one row after another) against one token record rec with AVX-512 VNNI, storing row j's result at out[j] + i·oadv bytes (see genRows4PZ).")
	Pragma("noescape")
	wa, za := Load(Param("w"), GP64()), Load(Param("z"), GP64())
	var ws, zs [R]GPVirtual
	for j := 0; j < R; j++ {
		ws[j], zs[j] = GP64(), GP64()
		MOVQ(Mem{Base: wa, Disp: 8 * j}, ws[j])
		MOVQ(Mem{Base: za, Disp: 8 * j}, zs[j])
	}
	nr := Load(Param("nrows"), GP64())
	o := GP64()
	XORQ(o, o)
	c, pidx := Z8, Z9
	zConsts(true, c, pidx)
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_rows")
	tp, n := Load(Param("rec"), GP64()), Load(Param("nunits"), GP64())
	for i := 0; i < 2*R; i++ {
		VPXORD(zreg(i), zreg(i), zreg(i))
	}
	unit := func(e int) {
		for r := 0; r < R; r++ {
			t := 16 + 4*r
			zUnitZero(Mem{Base: ws[r], Disp: 72 * e}, Mem{Base: tp, Disp: 256 * e}, Mem{Base: tp, Disp: 256*e + 128},
				Mem{Base: tp, Disp: 256*e + 192}, Mem{Base: zs[r], Disp: e},
				c, pidx, zreg(2*r+e), zreg(t), zreg(t+1), zreg(t+2), zreg(t+3))
		}
	}
	advance := func(units int) {
		for r := 0; r < R; r++ {
			ADDQ(U32(72*units), ws[r])
			ADDQ(Imm(uint64(units)), zs[r])
		}
		ADDQ(U32(256*units), tp)
	}
	CMPQ(n, Imm(2))
	JL(LabelRef(name + "_tail"))
	Label(name + "_loop")
	unit(0)
	unit(1)
	advance(2)
	SUBQ(Imm(2), n)
	CMPQ(n, Imm(2))
	JGE(LabelRef(name + "_loop"))
	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	unit(0)
	advance(1)
	Label(name + "_end")
	oa := Load(Param("out"), tp)
	for r := 0; r < R; r++ {
		a := zreg(2 * r)
		VADDPS(zreg(2*r+1), a, a)
		hsum16(a, zreg(16))
		MOVQ(Mem{Base: oa, Disp: 8 * r}, n)
		VMOVSS(a.AsX(), Mem{Base: n, Index: o, Scale: 1})
	}
	ADDQ(paramAddr("oadv"), o)
	DECQ(nr)
	JNZ(LabelRef(name + "_rows"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}
