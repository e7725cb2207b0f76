// This file generates the AVX2 Q4_K and Q6_K GEMM tiles (prefill on CPUs without AVX-512
// VNNI): one weight row x T tokens (T <= 8), so each super-block's unpacked values and scales
// are reused for T tokens (for T > 4 the float accumulators live on the stack).
//
// Tokens come as the records of the VNNI K-quant kernels (kRecBytes per super-block, see
// vnni_k4.go), which also carry at kRecFB the 8 floats dx·bsum8[j] (the Q4_K mins term per
// sub-block of 32, premultiplied by the token's scale).
//
// Quad order: per 128 values (group g: units A..D of 32 values, each one Q4_K sub-block or two
// Q6_K ones), the weights' units are interleaved by quadOrder (VPUNPCKLWD/HWD, VPUNPCKLDQ/HDQ)
// into registers r0..r3 whose 128-bit half k holds words 8k+2i, 8k+2i+1 of the four units as
// [A B C D A B C D]; the token's values come in the same order (records built by pairOrderK in
// kernels/quant_ktile.go). Each int16 lane of VPMADDUBSW(r_i, x_i) then belongs to one
// sub-block, the same for all i, so per token
//
//	Q4_K: sumi += VPMADDWD(Σ_i VPMADDUBSW(r_i, x_i), scales)      (≤ 4·2·15·127 per lane)
//	Q6_K: sumi += VPMADDWD(VPMADDUBSW(r0, x0) + VPMADDUBSW(r1, x1), scales) + the same for 2, 3
//
// (Q6_K values reach 63: ≤ 4·63·127 per lane). Int32 lane 4k + 2h + u/2 sums the words w of
// unit u with w/8 = k and w%2 = h. Per super-block
//
//	Q4_K: acc += float(sumi)·(d·dx);  acc -= (float(m)·dmin)·(dx·bsum8)   (lane j = sub-block j)
//	Q6_K: sumi starts at -32·(sc[2L]·bsum[2L] + sc[2L+1]·bsum[2L+1]);  acc += float(sumi)·(d·dx)
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// kRecFB is the offset of the 8 float32 dx·bsum8 in a token's record.
const kRecFB = 344

// VPSHUFB controls of the quad-order scale vectors, 32 bytes per group g of 128 values (units
// u = 0..3 in words s with s%4 = u): Q4_K word s = byte 4g+s%4 of the scale qword
// (zero-extended); Q6_K word s of half k = scale 2(4g+s%4)+k (in the high byte too: VPSRAW 8
// sign-extends).
var ctrlK4A, ctrlK6A Mem

// quadOrder interleaves four 32-byte units (A, B, C, D) word by word into the registers of the
// quad order: register i holds, in each 128-bit half k, the words 8k+2i and 8k+2i+1 of A, B, C,
// D as [A B C D A B C D].
func quadOrder(u [4]VecVirtual) [4]VecVirtual {
	abl, abh, cdl, cdh := YMM(), YMM(), YMM(), YMM()
	VPUNPCKLWD(u[1], u[0], abl)
	VPUNPCKHWD(u[1], u[0], abh)
	VPUNPCKLWD(u[3], u[2], cdl)
	VPUNPCKHWD(u[3], u[2], cdh)
	var r [4]VecVirtual
	for i := range r {
		r[i] = YMM()
	}
	VPUNPCKLDQ(cdl, abl, r[0])
	VPUNPCKHDQ(cdl, abl, r[1])
	VPUNPCKLDQ(cdh, abh, r[2])
	VPUNPCKHDQ(cdh, abh, r[3])
	return r
}

func constsKA() {
	ctrlK4A = GLOBL("q_ctrlk4a", RODATA|NOPTR)
	for g := 0; g < 2; g++ {
		for w := 0; w < 16; w++ {
			DATA(32*g+2*w, U8(4*g+w%4))
			DATA(32*g+2*w+1, U8(0x80))
		}
	}
	ctrlK6A = GLOBL("q_ctrlk6a", RODATA|NOPTR)
	for g := 0; g < 2; g++ {
		for w := 0; w < 16; w++ {
			v := U8(2*(4*g+w%4) + w/8)
			DATA(32*g+2*w, v)
			DATA(32*g+2*w+1, v)
		}
	}
}

// genTileK4A emits q4KTileA1x<T>: one Q4_K row (nb super-blocks at w) x T tokens (records at
// xr, tokens xstride bytes apart), out[t*ostride].
func genTileK4A(T int) {
	name := fmt.Sprintf("q4KTileA1x%d", T)
	TEXT(name, NOSPLIT, "func(w *byte, xr *int8, xstride int, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes one Q4_K row x %d tokens with AVX2 (see genTileK4A).", name, T))
	Pragma("noescape")
	kt := loadKTile(T)
	wp, xp, n, tok := kt.wp, kt.xp, kt.n, kt.tok
	sumi := make([]VecVirtual, T)
	for t := range sumi {
		sumi[t] = YMM()
	}
	acc := newKAccs(T)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	kt.nextTokens()
	sc, mn := unpackK4Scales(wp)
	for t := 0; t < T; t++ {
		VPXOR(sumi[t], sumi[t], sumi[t])
	}
	for g := 0; g < 2; g++ {
		s, sv := YMM(), YMM()
		VMOVQ(sc, s.AsX())
		VPBROADCASTQ(s.AsX(), s)
		VPSHUFB(ctrlK4A.Offset(32*g), s, sv)
		var u [4]VecVirtual
		for c := 0; c < 2; c++ {
			lo, hi := YMM(), YMM()
			VMOVDQU(Mem{Base: wp, Disp: 16 + 64*g + 32*c}, lo)
			VPSRLW(Imm(4), lo, hi)
			VPAND(mask0F, lo, lo)
			VPAND(mask0F, hi, hi)
			u[2*c], u[2*c+1] = lo, hi
		}
		r := quadOrder(u)
		for t := 0; t < T; t++ {
			p, q := YMM(), YMM()
			VPMADDUBSW(tok(t).Offset(128*g), r[0], p)
			for i := 1; i < 4; i++ {
				VPMADDUBSW(tok(t).Offset(128*g+32*i), r[i], q)
				VPADDW(q, p, p)
			}
			VPMADDWD(sv, p, p)
			VPADDD(p, sumi[t], sumi[t])
		}
	}
	// mf = float(mins) · dmin, d = fp16 d broadcast
	mf, d, dx := YMM(), YMM(), YMM()
	VMOVQ(mn, mf.AsX())
	VPMOVZXBD(mf.AsX(), mf)
	VCVTDQ2PS(mf, mf)
	VPBROADCASTW(Mem{Base: wp, Disp: 2}, d.AsX())
	VCVTPH2PS(d.AsX(), d)
	VMULPS(d, mf, mf)
	VPBROADCASTW(Mem{Base: wp}, d.AsX())
	VCVTPH2PS(d.AsX(), d)
	for t := 0; t < T; t++ {
		m := tok(t)
		VBROADCASTSS(m.Offset(kRecD), dx)
		VMULPS(d, dx, dx)
		VCVTDQ2PS(sumi[t], sumi[t])
		acc.update(t, func(a VecVirtual) {
			VFMADD231PS(dx, sumi[t], a)
			VFNMADD231PS(m.Offset(kRecFB), mf, a)
		})
	}
	ADDQ(U32(144), wp)
	ADDQ(U32(kRecBytes), xp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	storeKTileA(acc)
}

// kAccs are the float accumulators of a tile: registers for T <= 4, else 32-byte stack slots
// (updated once per super-block and token, so the 8 int sums fit in registers).
type kAccs struct {
	regs []VecVirtual
	mem  Mem
	T    int
}

func newKAccs(T int) *kAccs {
	a := &kAccs{T: T}
	if T <= 4 {
		for t := 0; t < T; t++ {
			r := YMM()
			VXORPS(r, r, r)
			a.regs = append(a.regs, r)
		}
		return a
	}
	a.mem = AllocLocal(32 * T)
	z := YMM()
	VXORPS(z, z, z)
	for t := 0; t < T; t++ {
		VMOVUPS(z, a.mem.Offset(32*t))
	}
	return a
}

// update runs f on token t's accumulator.
func (a *kAccs) update(t int, f func(acc VecVirtual)) {
	if a.regs != nil {
		f(a.regs[t])
		return
	}
	r := YMM()
	VMOVUPS(a.mem.Offset(32*t), r)
	f(r)
	VMOVUPS(r, a.mem.Offset(32*t))
}

// final returns token t's accumulator in a register.
func (a *kAccs) final(t int) VecVirtual {
	if a.regs != nil {
		return a.regs[t]
	}
	r := YMM()
	VMOVUPS(a.mem.Offset(32*t), r)
	return r
}

// storeKTileA writes the horizontal sums of acc[t] to out[t*ostride] and returns.
func storeKTileA(acc *kAccs) {
	op := Load(Param("out"), GP64())
	os := Load(Param("ostride"), GP64())
	SHLQ(Imm(2), os)
	tmp := YMM()
	for t := 0; t < acc.T; t++ {
		a := acc.final(t)
		hsum(a, tmp)
		VMOVSS(a.AsX(), Mem{Base: op})
		if t+1 < acc.T {
			ADDQ(os, op)
		}
	}
	VZEROUPPER()
	RET()
}

// genTileK6A emits q6KTileA1x<T>: one Q6_K row (nb super-blocks at w) x T tokens.
func genTileK6A(T int) {
	name := fmt.Sprintf("q6KTileA1x%d", T)
	TEXT(name, NOSPLIT, "func(w *byte, xr *int8, xstride int, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes one Q6_K row x %d tokens with AVX2 (see genTileK6A).", name, T))
	Pragma("noescape")
	kt := loadKTile(T)
	wp, xp, n, tok := kt.wp, kt.xp, kt.n, kt.tok
	sumi := make([]VecVirtual, T)
	for t := range sumi {
		sumi[t] = YMM()
	}
	acc := newKAccs(T)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	kt.nextTokens()
	// sumi = -32·(sc · bsums) pairs: neg = 0 - (sc << 5) as int16
	neg, z := YMM(), YMM()
	VPMOVSXBW(Mem{Base: wp, Disp: 192}, neg)
	VPSLLW(Imm(5), neg, neg)
	VPXOR(z, z, z)
	VPSUBW(neg, z, neg)
	for t := 0; t < T; t++ {
		VPMADDWD(tok(t).Offset(kRecSum16), neg, sumi[t])
	}
	scB := YMM()
	VBROADCASTI128(Mem{Base: wp, Disp: 192}, scB)
	b, c2, sv, p := YMM(), YMM(), YMM(), YMM()
	// six6 puts the 6-bit values of part i (elements 32i..32i+31 of half h) in r.
	six6 := func(h, i int, r, t VecVirtual) {
		VMOVDQU(Mem{Base: wp, Disp: 64*h + 32*(i%2)}, r)
		if i >= 2 {
			VPSRLW(Imm(4), r, r)
		}
		VPAND(mask0F, r, r)
		VMOVDQU(Mem{Base: wp, Disp: 128 + 32*h}, t)
		switch i {
		case 0:
			VPSLLW(Imm(4), t, t)
		case 1:
			VPSLLW(Imm(2), t, t)
		case 3:
			VPSRLW(Imm(2), t, t)
		}
		VPAND(mask30, t, t)
		VPOR(t, r, r)
	}
	for g := 0; g < 2; g++ {
		var u [4]VecVirtual
		for i := range u {
			u[i] = YMM()
			six6(g, i, u[i], b)
		}
		r := quadOrder(u)
		VPSHUFB(ctrlK6A.Offset(32*g), scB, sv)
		VPSRAW(Imm(8), sv, sv)
		for t := 0; t < T; t++ {
			for i := 0; i < 4; i += 2 {
				VPMADDUBSW(tok(t).Offset(128*g+32*i), r[i], p)
				VPMADDUBSW(tok(t).Offset(128*g+32*i+32), r[i+1], c2)
				VPADDW(c2, p, p)
				VPMADDWD(sv, p, p)
				VPADDD(p, sumi[t], sumi[t])
			}
		}
	}
	d, dx := YMM(), YMM()
	VPBROADCASTW(Mem{Base: wp, Disp: 208}, d.AsX())
	VCVTPH2PS(d.AsX(), d)
	for t := 0; t < T; t++ {
		VBROADCASTSS(tok(t).Offset(kRecD), dx)
		VMULPS(d, dx, dx)
		VCVTDQ2PS(sumi[t], sumi[t])
		acc.update(t, func(a VecVirtual) { VFMADD231PS(dx, sumi[t], a) })
	}
	ADDQ(U32(210), wp)
	ADDQ(U32(kRecBytes), xp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	storeKTileA(acc)
}
