// Command krows generates q4KRows4A and q6KRows4A (kernels/quant_krows_amd64.s, declarations in
// kernels/quant_krows_stub_amd64.go), the AVX2 (no VNNI) Q4_K and Q6_K decode kernels that read
// four weight streams: row group i is rows w[j] + i·adv (j = 0..3), each against one
// Q8_K-quantized token, row j's result stored at out[j] + i·oadv bytes.
//
//	cd kernels/internal/asmgen/krows && go run . -out ../../../quant_krows_amd64.s -stubs ../../../quant_krows_stub_amd64.go -pkg kernels
//
// Per super-block each row's integer work is that of the one-row dots (dotQ4KAVX2,
// dotQ6KAVX2); the four rows' int32 lanes are then summed and transposed into one register
// (fold4) so that the conversion, the scaling by the rows' fp16 scales and the FMA with the
// token's scale run once for four rows. A row's lanes never mix with another row's, so its
// result does not depend on the other rows of its group. The plain-Go twins are
// q4KRow4ARef and q6KRow4ARef in kernels/quant_krows.go.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var (
	mask0F  Mem // 32 x 0x0f
	mask30  Mem // 32 x 0x30
	ctrlK4  Mem // 8 x 32 bytes: VPSHUFB controls broadcasting byte j of a qword as a word
	ctrlK6W Mem // 4 x 32 bytes: word 2i of each half to the low half's words, 2i+1 to the high half's
	ctrlDM  Mem // VPSHUFB: fp16 words [d0 m0 d1 m1 d2 m2 d3 m3] -> [d0 d1 d2 d3 m0 m1 m2 m3]
)

var (
	ctrlSA Mem // VPSHUFB: Q4_K scale bytes b0..b11 -> [b4..7 b8..11 b0..3 b8..11]
	ctrlSB Mem // VPSHUFB: -> [0 b4..7 0 b0..3] (the top two bits of the high mins and scales)
	maskSA Mem // [63 x4, 15 x4, 63 x4, 15 x4]
)

func consts() {
	mask0F = GLOBL("kr_mask0f", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(i, U8(0x0f))
	}
	mask30 = GLOBL("kr_mask30", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(i, U8(0x30))
	}
	ctrlK4 = GLOBL("kr_ctrlk4", RODATA|NOPTR)
	for j := 0; j < 8; j++ {
		for i := 0; i < 16; i++ {
			DATA(32*j+2*i, U8(j))
			DATA(32*j+2*i+1, U8(0x80))
		}
	}
	ctrlK6W = GLOBL("kr_ctrlk6w", RODATA|NOPTR)
	for i := 0; i < 4; i++ {
		for b := 0; b < 32; b++ {
			w := 2*i + b/16
			DATA(32*i+b, U8(2*w+b%2))
		}
	}
	ctrlSA = GLOBL("kr_ctrlsa", RODATA|NOPTR)
	for i, v := range []int{4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11} {
		DATA(i, U8(v))
	}
	ctrlSB = GLOBL("kr_ctrlsb", RODATA|NOPTR)
	for i, v := range []int{0x80, 0x80, 0x80, 0x80, 4, 5, 6, 7, 0x80, 0x80, 0x80, 0x80, 0, 1, 2, 3} {
		DATA(i, U8(v))
	}
	maskSA = GLOBL("kr_masksa", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		v := 63
		if i/4%2 == 1 {
			v = 15
		}
		DATA(i, U8(v))
	}
	ctrlDM = GLOBL("kr_ctrldm", RODATA|NOPTR)
	for i, w := range []int{0, 2, 4, 6, 1, 3, 5, 7} {
		DATA(2*i, U8(2*w))
		DATA(2*i+1, U8(2*w+1))
	}
}

func main() {
	consts()
	genRows4K(false)
	genRows4K(true)
	Generate()
}

func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// prefetchK is how far ahead of each row q4KRows4A and q6KRows4A prefetch (PREFETCHNTA, every
// line of each super-block). Measured on the Zen 5 VM (kernels' BenchmarkDecodeModes method on
// 5632x2048, a variant with and one without, four runs of 30 turns, 5 Dec 2026): Q4_K +5-6%
// when the host gave above 65 GB/s and +7-17% below, Q6_K +11-14% above and +6-30% below.
const prefetchK = 2048

// genRows4K emits q4KRows4A or, with q6, q6KRows4A (see the file comment). bs is the token's
// bsum8 (Q4_K: 8 sums of 32 values per super-block) or bsums (Q6_K: 16 sums of 16).
func genRows4K(q6 bool) {
	name, bb, bsb := "q4KRows4A", 144, 16
	if q6 {
		name, bb, bsb = "q6KRows4A", 210, 32
	}
	TEXT(name, NOSPLIT, "func(w **byte, adv int, nrows int, xq *int8, xd *float32, bs *int16, nb int, out **float32, oadv int)")
	Doc(name + " computes nrows row groups of four rows, row j of group i at w[j] + i·adv, against one Q8_K token with AVX2, storing row j's result at out[j] + i·oadv bytes (see kernels/internal/asmgen/krows).")
	Pragma("noescape")
	cnt := AllocLocal(8)  // super-blocks left in the row group
	ores := AllocLocal(8) // byte offset of the group's results
	wa := Load(Param("w"), GP64())
	var bases [4]GPVirtual
	for j := range bases {
		bases[j] = GP64()
		MOVQ(Mem{Base: wa, Disp: 8 * j}, bases[j])
	}
	MOVQ(U32(0), ores)
	CMPQ(paramAddr("nrows"), Imm(0))
	JE(LabelRef(name + "_done"))
	Label(name + "_rows")
	off, xp, dp, bp := GP64(), GP64(), GP64(), GP64()
	XORQ(off, off)
	Load(Param("xq"), xp)
	Load(Param("xd"), dp)
	Load(Param("bs"), bp)
	acc := YMM()
	VXORPS(acc, acc, acc)
	t := GP64()
	Load(Param("nb"), t)
	MOVQ(t, cnt)
	TESTQ(t, t)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	wm := func(r, disp int) Mem { return Mem{Base: bases[r], Index: off, Scale: 1, Disp: disp} }
	m0f, m30 := YMM(), YMM()
	VMOVDQU(mask0F, m0f)
	VMOVDQU(mask30, m30)
	var ps [4]VecVirtual
	for r := 0; r < 4; r++ {
		if q6 {
			ps[r] = q6KRow(wm, r, xp, bp, m0f, m30)
		} else {
			ps[r] = q4KRow(wm, r, xp, bp, m0f, m30)
		}
	}
	for r := 0; r < 4; r++ {
		for d := 0; d < bb; d += 64 {
			PREFETCHNTA(wm(r, prefetchK+d))
		}
	}
	h := fold4(ps)
	VCVTDQ2PS(h, h)
	var sy VecVirtual
	if q6 {
		sy = q6KScales(wm)
	} else {
		sy = q4KScales(wm)
	}
	dx := YMM()
	VBROADCASTSS(Mem{Base: dp}, dx)
	VMULPS(dx, sy, sy)
	VFMADD231PS(sy, h, acc)
	ADDQ(U32(uint64(bb)), off)
	ADDQ(U32(256), xp)
	ADDQ(Imm(4), dp)
	ADDQ(Imm(uint64(bsb)), bp)
	DECQ(cnt)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	hi := XMM()
	VEXTRACTF128(Imm(1), acc, hi)
	if q6 {
		VADDPS(hi, acc.AsX(), acc.AsX()) // lane r + lane 4+r
	} else {
		VSUBPS(hi, acc.AsX(), acc.AsX()) // scaled sums minus scaled mins
	}
	oa := Load(Param("out"), GP64())
	o := GP64()
	MOVQ(ores, o)
	p := GP64()
	for r := 0; r < 4; r++ {
		MOVQ(Mem{Base: oa, Disp: 8 * r}, p)
		VEXTRACTPS(Imm(uint64(r)), acc.AsX(), Mem{Base: p, Index: o, Scale: 1})
	}
	ADDQ(paramAddr("oadv"), o)
	MOVQ(o, ores)
	for r := 0; r < 4; r++ {
		ADDQ(paramAddr("adv"), bases[r])
	}
	DECQ(paramAddr("nrows"))
	JNZ(LabelRef(name + "_rows"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// q4KRow emits row r's integer work on one Q4_K super-block: the eight sub-block sums
// sc_j·Σq4·q8 in 8 int32 lanes (as dotQ4KAVX2), then the lanes' two halves added and the four
// min sums m_j·bsum8_j pairs placed in the high half: [sums 4 lanes | mins 4 lanes].
func q4KRow(wm func(r, disp int) Mem, r int, xp, bp GPVirtual, m0f, m30 VecVirtual) VecVirtual {
	u := unpackK4Scales(wm, r, m30)
	m, s := XMM(), YMM()
	VPMOVZXBW(u, m)
	VPERMQ(Imm(0x55), u.AsY(), s) // the scales in every qword
	VPMADDWD(Mem{Base: bp}, m, m)
	sumi := YMM()
	for c := 0; c < 4; c++ {
		q, lo, hi, p, sv := YMM(), YMM(), YMM(), YMM(), YMM()
		VMOVDQU(wm(r, 16+32*c), q)
		VPAND(m0f, q, lo)
		VPSRLW(Imm(4), q, hi)
		VPAND(m0f, hi, hi)
		VPMADDUBSW(Mem{Base: xp, Disp: 64 * c}, lo, p)
		VPSHUFB(ctrlK4.Offset(32*(2*c)), s, sv)
		if c == 0 {
			VPMADDWD(sv, p, sumi)
		} else {
			VPMADDWD(sv, p, p)
			VPADDD(p, sumi, sumi)
		}
		VPMADDUBSW(Mem{Base: xp, Disp: 64*c + 32}, hi, p)
		VPSHUFB(ctrlK4.Offset(32*(2*c+1)), s, sv)
		VPMADDWD(sv, p, p)
		VPADDD(p, sumi, sumi)
	}
	a, b := YMM(), YMM()
	VINSERTI128(Imm(1), m, sumi, a)      // [sums low half | mins]
	VPERM2I128(Imm(0x81), sumi, sumi, b) // [sums high half | 0]
	VPADDD(b, a, a)
	return a
}

// q4KScales emits the four rows' fp16 d and dmin of the super-block as 8 floats
// [d0 d1 d2 d3 | dmin0 dmin1 dmin2 dmin3].
func q4KScales(wm func(r, disp int) Mem) VecVirtual {
	x := XMM()
	VMOVD(wm(0, 0), x)
	for r := 1; r < 4; r++ {
		VPINSRD(Imm(uint64(r)), wm(r, 0), x, x)
	}
	VPSHUFB(ctrlDM, x, x)
	sy := YMM()
	VCVTPH2PS(x, sy)
	return sy
}

// q6KRow emits row r's integer work on one Q6_K super-block, as dotQ6KAVX2: 8 int32 lanes of
// Σ sc_g·q6·q8 minus 32·Σ sc_g·bsum_g. The 16 scales are sign-extended to words once (sx),
// and each group's pair of scale words is picked from a half of them by one VPSHUFB.
func q6KRow(wm func(r, disp int) Mem, r int, xp, bp GPVirtual, m0f, m30 VecVirtual) VecVirtual {
	sx := YMM()
	VPMOVSXBW(wm(r, 192), sx)
	corr := YMM()
	VPMADDWD(Mem{Base: bp}, sx, corr)
	VPSLLD(Imm(5), corr, corr)
	sumi := YMM()
	first := true
	for h := 0; h < 2; h++ {
		sw := YMM()
		VPERMQ(Imm(uint64(0x44+0xaa*h)), sx, sw) // scales 8h..8h+7 in both halves
		ql0, ql1, qh := YMM(), YMM(), YMM()
		VMOVDQU(wm(r, 64*h), ql0)
		VMOVDQU(wm(r, 64*h+32), ql1)
		VMOVDQU(wm(r, 128+32*h), qh)
		for i := 0; i < 4; i++ {
			a, b := YMM(), YMM()
			switch i {
			case 0:
				VPAND(m0f, ql0, a)
				VPSLLW(Imm(4), qh, b)
			case 1:
				VPAND(m0f, ql1, a)
				VPSLLW(Imm(2), qh, b)
			case 2:
				VPSRLW(Imm(4), ql0, a)
				VPAND(m0f, a, a)
				VMOVDQU(qh, b)
			case 3:
				VPSRLW(Imm(4), ql1, a)
				VPAND(m0f, a, a)
				VPSRLW(Imm(2), qh, b)
			}
			VPAND(m30, b, b)
			VPOR(b, a, a)
			p := YMM()
			VPMADDUBSW(Mem{Base: xp, Disp: 128*h + 32*i}, a, p)
			sv := YMM()
			VPSHUFB(ctrlK6W.Offset(32*i), sw, sv)
			if first {
				VPMADDWD(sv, p, sumi)
				first = false
			} else {
				VPMADDWD(sv, p, p)
				VPADDD(p, sumi, sumi)
			}
		}
	}
	VPSUBD(corr, sumi, sumi)
	return sumi
}

// q6KScales emits the four rows' fp16 scales d (bytes 208..209) as 8 floats [d0..d3 | d0..d3].
func q6KScales(wm func(r, disp int) Mem) VecVirtual {
	g, t := GP64(), GP64()
	MOVWQZX(wm(0, 208), g)
	for r := 1; r < 4; r++ {
		MOVWQZX(wm(r, 208), t)
		SHLQ(Imm(uint64(16*r)), t)
		ORQ(t, g)
	}
	x := XMM()
	VMOVQ(g, x)
	VPUNPCKLQDQ(x, x, x)
	sy := YMM()
	VCVTPH2PS(x, sy)
	return sy
}

// fold4 sums and transposes four rows' int32 lanes within each 128-bit half: the result's
// lane r (and 4+r) is the sum of lanes 0..3 (4..7) of ps[r]. It clobbers ps.
func fold4(ps [4]VecVirtual) VecVirtual {
	t0, t1 := YMM(), YMM()
	VPUNPCKLDQ(ps[1], ps[0], t0)
	VPUNPCKHDQ(ps[1], ps[0], t1)
	VPADDD(t1, t0, t0)
	VPUNPCKLDQ(ps[3], ps[2], t1)
	VPUNPCKHDQ(ps[3], ps[2], ps[2])
	VPADDD(ps[2], t1, t1)
	VPUNPCKLQDQ(t1, t0, ps[0])
	VPUNPCKHQDQ(t1, t0, ps[1])
	VPADDD(ps[1], ps[0], ps[0])
	return ps[0]
}

// unpackK4Scales emits the unpacking of row r's Q4_K scale bytes (4..15) into one register
// [8 six-bit mins | 8 six-bit scales] (bytes) with vector ops: one 16-byte load, two VPSHUFB
// placing each output byte's low and top bits, shifts, a blend and masks. (It replaced 3 loads,
// 22 GP ops and 2 GP-to-vector moves per row: 1.07-1.12x for q4KRows4A in L1.)
func unpackK4Scales(wm func(r, disp int) Mem, r int, m30 VecVirtual) VecVirtual {
	v, a, t, b := XMM(), XMM(), XMM(), XMM()
	VMOVDQU(wm(r, 4), v)
	VPSHUFB(ctrlSA, v, a)
	VPSRLW(Imm(4), a, t)
	VPBLENDD(Imm(0b0010), t, a, a) // dword 1 (the high mins) from the shifted copy
	VPAND(maskSA, a, a)
	VPSHUFB(ctrlSB, v, b)
	VPSRLW(Imm(2), b, b)
	VPAND(m30.AsX(), b, b)
	VPOR(b, a, a)
	return a
}
