// This file generates q8_0Rows4P, the Q8_0 decode kernel that reads
// four weight streams: row group i is rows w[j] + i·adv (j = 0..3), each against one token,
// results stored at out[j] + i·oadv bytes. With adv one row and the four w[j] a quarter of a worker's share apart,
// every stream is one long sequential read that the hardware prefetcher follows on its own;
// the four interleaved short streams of four consecutive rows (q8_0Rows4Z) make it re-learn
// three streams every group, and cap a core near two thirds of its streaming bandwidth (see
// docs/kernels-quant.md, "Four streams"). The per-row math is genRows4Z's, unit for unit, so a
// row's result does not depend on which kernel or grouping computed it. Its Q4_0 twin
// q4_0Rows4P is genRowsRP's (vnni_rows8p.go), which holds the token's unit in registers.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// prefetch4P is how far ahead (bytes) of each stream q8_0Rows4P prefetches (0: none), with
// prefetch4PInstr. Measured on the Zen 5 VM (BenchmarkDecodeModes: two threads, 512 MiB of
// 5632x2048 matrices from DRAM, each variant's GB/s over a plain read of the same memory in the
// same turn, split by the two bandwidth modes the host switches between; eight runs, 5 Dec
// 2026): PREFETCHNTA 2048 bytes ahead read 8.6-9.6% more than no prefetch when the host gave
// 73-75 GB/s and 0.3-3.4% more at 50-53 GB/s; PREFETCHT0 2048 ahead gained as much at 73-75
// but lost 1-3% at 50-53 (what an earlier session saw as "two threads lose 2-6%"), NTA 1024
// gained 0-1% at 73-75 and NTA 4096 lost 1-4% in both modes, PREFETCHT1 2048 lost 3-4% at 50.
var prefetch4P, prefetch4PInstr = 2048, "PREFETCHNTA"

// genRows4P emits q8_0Rows4P (the per-row math of q8_0Rows4Z: rows4Unit).
func genRows4P() {
	const R, q4 = 4, false
	name, ub, xb, corr, corrType := "q8_0Rows4P", 68, 64, "fz", "*float32"
	TEXT(name, NOSPLIT, "func(w **byte, adv int, nrows int, xs *int8, xd *float32, "+corr+" "+corrType+", nunits int, out **float32, oadv int)")
	Doc(name + " computes nrows row groups of four rows, row j of group i at w[j] + i·adv, against one token with AVX-512 VNNI, storing row j's result at out[j] + i·oadv bytes (see genRows4P).")
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
	// Z0..Z7 accumulators (row r, unit parity e: Z(2r+e)), Z8 the byte constant, Z9 the VPERMW
	// index; rows4Unit's token unit in Z10..Z15, the rows' temporaries from Z16.
	c, pidx := Z8, Z9
	zConsts(q4, c, pidx)
	TESTQ(nr, nr)
	JZ(LabelRef(name + "_done"))
	Label(name + "_rows")
	off := GP64()
	XORQ(off, off)
	xp, dp, cp, n := Load(Param("xs"), GP64()), Load(Param("xd"), GP64()), Load(Param(corr), GP64()), Load(Param("nunits"), GP64())
	for i := 0; i < 2*R; i++ {
		VPXORD(zreg(i), zreg(i), zreg(i))
	}
	rowMem := func(r, disp int) Mem { return Mem{Base: bases[r], Index: off, Scale: 1, Disp: disp} }
	unitPairs(name, n, off, xp, dp, cp, ub, xb, func(disp, e int) {
		rows4Unit(R, e, func(r int) Mem { return rowMem(r, disp) }, Mem{Base: xp}, Mem{Base: dp}, Mem{Base: cp}, c, pidx)
	}, func() { streamsPrefetch(R, rowMem, prefetch4P, prefetch4PInstr, 2*ub) })
	oa := Load(Param("out"), xp)
	for r := 0; r < R; r++ {
		a := zreg(2 * r)
		VADDPS(zreg(2*r+1), a, a)
		hsum16(a, zreg(16))
		MOVQ(Mem{Base: oa, Disp: 8 * r}, dp)
		VMOVSS(a.AsX(), Mem{Base: dp, Index: o, Scale: 1})
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

// streamsPrefetch emits the prefetches of a streams kernel's unit pair: for each of its R
// rows, the span bytes at ahead bytes past the pair (rowMem(r, disp): row r's address of the
// pair plus disp), one per 64-byte line, with instr (PREFETCHT0, PREFETCHT1 or PREFETCHNTA);
// nothing when ahead is 0.
func streamsPrefetch(R int, rowMem func(r, disp int) Mem, ahead int, instr string, span int) {
	if ahead <= 0 {
		return
	}
	for r := 0; r < R; r++ {
		for d := 0; d < span; d += 64 {
			switch m := rowMem(r, ahead+d); instr {
			case "PREFETCHT1":
				PREFETCHT1(m)
			case "PREFETCHNTA":
				PREFETCHNTA(m)
			default:
				PREFETCHT0(m)
			}
		}
	}
}

// paramAddr is the stack address of the named scalar parameter, for a memory operand.
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}
