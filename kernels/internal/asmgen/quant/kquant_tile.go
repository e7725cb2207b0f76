// This file generates the AVX2 Q4_K and Q6_K GEMM tiles (prefill on CPUs without AVX-512
// VNNI): one weight row x T tokens (T <= 4), so each super-block's unpacked values and scales
// are reused for T tokens, with all accumulators in registers.
//
// Tokens come as the records of the VNNI K-quant kernels (kRecBytes per super-block, see
// vnni_k4.go), which also carry at kRecFB the 8 floats dx·bsum8[j] (the Q4_K mins term per
// sub-block of 32, premultiplied by the token's scale).
//
// Per token t the 8 int32 lanes of sumi take, per 32 values, VPMADDWD(sub-block scales,
// VPMADDUBSW(weights, x)) (lane L = the 4 elements 4L..4L+3 of that 32), and per super-block
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

// genTileK4A emits q4KTileA1x<T>: one Q4_K row (nb super-blocks at w) x T tokens (records at
// xr, tokens xstride bytes apart), out[t*ostride].
func genTileK4A(T int) {
	name := fmt.Sprintf("q4KTileA1x%d", T)
	TEXT(name, NOSPLIT, "func(w *byte, xr *int8, xstride int, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes one Q4_K row x %d tokens with AVX2 (see genTileK4A).", name, T))
	Pragma("noescape")
	kt := loadKTile(T)
	wp, xp, n, tok := kt.wp, kt.xp, kt.n, kt.tok
	sumi, acc := make([]VecVirtual, T), make([]VecVirtual, T)
	for t := 0; t < T; t++ {
		sumi[t], acc[t] = YMM(), YMM()
		VXORPS(acc[t], acc[t], acc[t])
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	sc, mn := unpackK4Scales(wp)
	s := YMM()
	VMOVQ(sc, s.AsX())
	VPBROADCASTQ(s.AsX(), s)
	for t := 0; t < T; t++ {
		VPXOR(sumi[t], sumi[t], sumi[t])
	}
	lo, hi, svlo, svhi, p := YMM(), YMM(), YMM(), YMM(), YMM()
	for c := 0; c < 4; c++ {
		VMOVDQU(Mem{Base: wp, Disp: 16 + 32*c}, lo)
		VPSRLW(Imm(4), lo, hi)
		VPAND(mask0F, lo, lo)
		VPAND(mask0F, hi, hi)
		VPSHUFB(ctrlK4.Offset(32*(2*c)), s, svlo)
		VPSHUFB(ctrlK4.Offset(32*(2*c+1)), s, svhi)
		for t := 0; t < T; t++ {
			VPMADDUBSW(tok(t).Offset(64*c), lo, p)
			VPMADDWD(svlo, p, p)
			VPADDD(p, sumi[t], sumi[t])
			VPMADDUBSW(tok(t).Offset(64*c+32), hi, p)
			VPMADDWD(svhi, p, p)
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
		VFMADD231PS(dx, sumi[t], acc[t])
		VFNMADD231PS(m.Offset(kRecFB), mf, acc[t])
	}
	ADDQ(U32(144), wp)
	ADDQ(U32(kRecBytes), xp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	storeKTileA(acc)
}

// storeKTileA writes the horizontal sums of acc[t] to out[t*ostride] and returns.
func storeKTileA(acc []VecVirtual) {
	op := Load(Param("out"), GP64())
	os := Load(Param("ostride"), GP64())
	SHLQ(Imm(2), os)
	tmp := YMM()
	for t := range acc {
		hsum(acc[t], tmp)
		VMOVSS(acc[t].AsX(), Mem{Base: op})
		if t+1 < len(acc) {
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
	sumi, acc := make([]VecVirtual, T), make([]VecVirtual, T)
	for t := 0; t < T; t++ {
		sumi[t], acc[t] = YMM(), YMM()
		VXORPS(acc[t], acc[t], acc[t])
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
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
	a, b, sv, p := YMM(), YMM(), YMM(), YMM()
	for h := 0; h < 2; h++ {
		for i := 0; i < 4; i++ {
			VMOVDQU(Mem{Base: wp, Disp: 64*h + 32*(i%2)}, a)
			if i >= 2 {
				VPSRLW(Imm(4), a, a)
			}
			VPAND(mask0F, a, a)
			VMOVDQU(Mem{Base: wp, Disp: 128 + 32*h}, b)
			switch i {
			case 0:
				VPSLLW(Imm(4), b, b)
			case 1:
				VPSLLW(Imm(2), b, b)
			case 3:
				VPSRLW(Imm(2), b, b)
			}
			VPAND(mask30, b, b)
			VPOR(b, a, a)
			VPSHUFB(ctrlK6.Offset(32*(4*h+i)), scB, sv)
			VPSRAW(Imm(8), sv, sv)
			for t := 0; t < T; t++ {
				VPMADDUBSW(tok(t).Offset(128*h+32*i), a, p)
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
		VFMADD231PS(dx, sumi[t], acc[t])
	}
	ADDQ(U32(210), wp)
	ADDQ(U32(kRecBytes), xp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	storeKTileA(acc)
}
