// This file generates q8_0Rows4Z, the AVX-512 VNNI Q8_0 decode kernel that works on four weight
// rows at once: each load of the token's values, lane scales and lane corrections (a block pair,
// the unit of genRowsZ) serves four rows, and the four rows' independent chains (VPDPBUSD,
// conversion, two FMAs) give the out-of-order core enough work to overlap with the weight
// loads. Two units per iteration go into two accumulators per row (even and odd units, summed
// at the end), the order of genRowsZ. q8_0Rows4ZTail is the same per-row math one row at a
// time, for the rows left over, so a row's result never depends on how rows are grouped; the
// Go twin of both is rows4ZRef.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// prefetchNext: 1 prefetches the next group of rows as one sequential stream into L1
// (PREFETCHT0), -1 into L2 (PREFETCHT1), 0 not at all. Four rows read side by side are four
// short streams (one row of TinyLlama is 2176 or 5984 bytes) that the hardware prefetcher keeps
// re-learning; the single-row kernel reads the same bytes as one long stream. Measured on the
// Zen 5 host (BenchmarkQ8DecodeHuge, 1 thread, DRAM, rows4 GB/s, 2 rounds x 3 shapes): none
// 14-16, into L1 16-21, into L2 17-24 (the single-row kernel 16-22 in the same runs).
var prefetchNext = -1

// prefetchGroups is how many groups of R rows ahead the prefetch stream runs. Measured
// (BenchmarkQ8RowsCPU/dram, rows4/rows1 per CPU-second, 3 alternating runs each at load ~20):
// 1 group 1.05/1.09/1.12, 2 groups 1.09/1.09/1.16, 4 groups 1.04/1.07/1.01; adding PREFETCHT0
// of each row 256 or 768 bytes ahead did not help (1.02-1.08).
var prefetchGroups = 2

// genRows4Z emits q8_0Rows4Z (R = 4: nrows a multiple of 4) or q8_0Rows4ZTail (R = 1): nrows
// rows rs bytes apart x one token of nunits block pairs, R rows at a time. Unlike genRowsZ, the
// lanes start from zero and the token's correction comes in float, premultiplied by its lane
// scale (q8Acts.fz): per lane and unit p = float(Σu·x)·dx + fz, then acc += p·dw: two FMAs
// instead of a copy, a multiply and an FMA.
func genRows4Z(R int) {
	const ub = 68
	name := "q8_0Rows4Z"
	if R == 1 {
		name = "q8_0Rows4ZTail"
	}
	TEXT(name, NOSPLIT, "func(w *byte, rs int, nrows int, xs *int8, xd *float32, fz *float32, nunits int, out *float32)")
	Doc(fmt.Sprintf("%s computes nrows (a multiple of %d) consecutive Q8_0 rows against one token, %d at a time, with AVX-512 VNNI (see genRows4Z).", name, R, R))
	Pragma("noescape")
	wrow := Load(Param("w"), GP64())
	rs := Load(Param("rs"), GP64())
	nr := Load(Param("nrows"), GP64())
	op := Load(Param("out"), GP64())
	rs3 := GP64()
	LEAQ(Mem{Base: rs, Index: rs, Scale: 2}, rs3)
	// Z0..Z7 accumulators (row r, unit parity e: Z(2r+e)), Z8 the 0x80 bytes, Z9 the VPERMW
	// index, Z10/Z11 token values, Z12/Z13 float corrections, Z14/Z15 lane scales of the two
	// units, Z16..Z27 per-row temporaries (weights, products, weight scales).
	c, pidx := Z8, Z9
	VPBROADCASTD(mask80, c)
	VMOVDQU64(permQ8Z, pidx)
	row := func(base Register, r int) Mem { return strided(base, rs, rs3, r) }
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_rows")
	wp := GP64()
	MOVQ(wrow, wp)
	xp := Load(Param("xs"), GP64())
	dp := Load(Param("xd"), GP64())
	cp := Load(Param("fz"), GP64())
	n := Load(Param("nunits"), GP64())
	pf := GP64()
	if prefetchNext != 0 {
		LEAQ(Mem{Base: wrow, Index: rs, Scale: uint8(R)}, pf)
		for g := 1; g < prefetchGroups; g++ {
			LEAQ(Mem{Base: pf, Index: rs, Scale: uint8(R)}, pf)
		}
	}
	for i := 0; i < 2*R; i++ {
		VPXORD(zreg(i), zreg(i), zreg(i))
	}
	// unit emits one unit (the one at byte offset off of each row, token unit e of the
	// iteration) for the R rows into accumulator parity e.
	unit := func(off, e int) {
		rows4Unit(R, e, func(r int) Mem { return row(wp, r).Offset(off) },
			Mem{Base: xp}, Mem{Base: dp}, Mem{Base: cp}, c, pidx)
	}
	unitPairs(name, n, wp, xp, dp, cp, ub, 64, unit, func() {
		if prefetchNext == 0 {
			return
		}
		// The next R rows, front to back, R·2·68 bytes per iteration: one sequential stream
		// one group ahead, as the single-row kernel reads its rows.
		for i := 0; i < (R*2*ub+63)/64+1; i++ {
			if prefetchNext > 0 {
				PREFETCHT0(Mem{Base: pf, Disp: 64 * i})
			} else {
				PREFETCHT1(Mem{Base: pf, Disp: 64 * i})
			}
		}
		ADDQ(U32(R*2*ub), pf)
	})
	for r := 0; r < R; r++ {
		a := zreg(2 * r)
		VADDPS(zreg(2*r+1), a, a)
		hsum16(a, zreg(16))
		VMOVSS(a.AsX(), Mem{Base: op, Disp: 4 * r})
	}
	ADDQ(Imm(uint64(4*R)), op)
	LEAQ(Mem{Base: wrow, Index: rs, Scale: uint8(R)}, wrow)
	SUBQ(Imm(uint64(R)), nr)
	JNZ(LabelRef(name + "_rows"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// rows4Unit emits one unit for R rows (row r's unit at rowMem(r)) against the token unit e of
// the iteration (its values, lane scales and float corrections at xm, dm, cm + 64·e) into the
// accumulators of parity e: Z(2r+e). Z8 holds the 0x80 bytes (c), Z9 the VPERMW index (pidx),
// Z10..Z15 the token unit, Z16..Z27 the rows' temporaries.
func rows4Unit(R, e int, rowMem func(r int) Mem, xm, dm, cm Mem, c, pidx VecPhysical) {
	xv, cv, dv := zreg(10+e), zreg(12+e), zreg(14+e)
	VMOVDQU64(xm.Offset(64*e), xv)
	VMOVDQU64(cm.Offset(64*e), cv)
	VMOVDQU64(dm.Offset(64*e), dv)
	for r := 0; r < R; r++ {
		wv, p, s := zreg(16+3*r), zreg(17+3*r), zreg(18+3*r)
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

// unitPairs emits the loop over a row's (or row group's) units: two units per iteration
// (parities 0 and 1, pre first), then the odd unit left; wp advances by the 2·ub weight bytes
// of a unit pair, xp by the token's 2·xb value bytes, dp and cp by its 128 bytes of lane scales
// and corrections, n (the units left) down to zero. It ends at the label name_end.
func unitPairs(name string, n, wp, xp, dp, cp Register, ub, xb int, unit func(off, e int), pre func()) {
	CMPQ(n, Imm(2))
	JL(LabelRef(name + "_tail"))
	Label(name + "_loop")
	pre()
	unit(0, 0)
	unit(ub, 1)
	ADDQ(U32(2*ub), wp)
	if 2*xb < 256 {
		ADDQ(Imm(uint64(2*xb)), xp)
	} else {
		ADDQ(U32(2*xb), xp)
	}
	ADDQ(Imm(128), dp)
	ADDQ(Imm(128), cp)
	SUBQ(Imm(2), n)
	CMPQ(n, Imm(2))
	JGE(LabelRef(name + "_loop"))
	Label(name + "_tail")
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	unit(0, 0)
	Label(name + "_end")
}
