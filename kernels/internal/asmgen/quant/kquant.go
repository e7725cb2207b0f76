// This file generates the AVX2 K-quant dot kernels: one Q4_K or Q6_K row against one Q8_K token.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genDotQ4K emits the Q4_K x Q8_K dot product of one row with one token over nb super-blocks:
// Σ_b dx_b*(d_b*Σ_j sc_j*Σ q4*q8 - dmin_b*Σ_j m_j*bsum8_j).
func genDotQ4K() {
	TEXT("dotQ4KAVX2", NOSPLIT, "func(w *byte, xq *int8, xd *float32, bsum8 *int16, nb int) float32")
	Doc("dotQ4KAVX2 is the dot product of one Q4_K row with one Q8_K-quantized token (see genDotQ4K).")
	Pragma("noescape")
	wp := Load(Param("w"), GP64())
	xp := Load(Param("xq"), GP64())
	dp := Load(Param("xd"), GP64())
	bp := Load(Param("bsum8"), GP64())
	n := Load(Param("nb"), GP64())
	acc, accm := YMM(), XMM()
	VXORPS(acc, acc, acc)
	VXORPS(accm, accm, accm)
	TESTQ(n, n)
	JZ(LabelRef("k4_end"))
	Label("k4_loop")
	sc, mn := unpackK4Scales(wp)
	dx := YMM()
	VBROADCASTSS(Mem{Base: dp}, dx)
	// mins
	m := XMM()
	VMOVQ(mn, m) // VEX: a legacy-SSE MOVQ among AVX ops costs a transition each block (25x slower)
	VPMOVZXBW(m, m)
	VPMADDWD(Mem{Base: bp}, m, m)
	VCVTDQ2PS(m, m)
	f := YMM()
	VPBROADCASTW(Mem{Base: wp, Disp: 2}, f.AsX())
	VCVTPH2PS(f.AsX(), f.AsX())
	VMULPS(dx.AsX(), f.AsX(), f.AsX())
	VFMADD231PS(f.AsX(), m, accm)
	// scales
	s := YMM()
	VMOVQ(sc, s.AsX())
	VPBROADCASTQ(s.AsX(), s)
	sumi := YMM()
	VPXOR(sumi, sumi, sumi)
	for c := 0; c < 4; c++ {
		q, lo, hi, p, sv := YMM(), YMM(), YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: wp, Disp: 16 + 32*c}, q)
		VPAND(mask0F, q, lo)
		VPSRLW(Imm(4), q, hi)
		VPAND(mask0F, hi, hi)
		VPMADDUBSW(Mem{Base: xp, Disp: 64 * c}, lo, p)
		VPSHUFB(ctrlK4.Offset(32*(2*c)), s, sv)
		VPMADDWD(sv, p, p)
		VPADDD(p, sumi, sumi)
		VPMADDUBSW(Mem{Base: xp, Disp: 64*c + 32}, hi, p)
		VPSHUFB(ctrlK4.Offset(32*(2*c+1)), s, sv)
		VPMADDWD(sv, p, p)
		VPADDD(p, sumi, sumi)
	}
	VCVTDQ2PS(sumi, sumi)
	VPBROADCASTW(Mem{Base: wp}, f.AsX())
	VCVTPH2PS(f.AsX(), f)
	VMULPS(dx, f, f)
	VFMADD231PS(f, sumi, acc)
	ADDQ(U32(144), wp)
	ADDQ(U32(256), xp)
	ADDQ(Imm(4), dp)
	ADDQ(Imm(16), bp)
	DECQ(n)
	JNZ(LabelRef("k4_loop"))
	Label("k4_end")
	tmp := YMM()
	hsum(acc, tmp)
	VHADDPS(accm, accm, accm)
	VHADDPS(accm, accm, accm)
	VSUBSS(accm, acc.AsX(), acc.AsX())
	VZEROUPPER()
	Store(acc.AsX(), ReturnIndex(0))
	RET()
}

// genDotQ6K emits the Q6_K x Q8_K dot product of one row with one token over nb super-blocks:
// Σ_b dx_b*d_b*(Σ_g sc_g*Σ q6*q8 - 32*Σ_g sc_g*bsum_g), q6 in 0..63.
func genDotQ6K() {
	TEXT("dotQ6KAVX2", NOSPLIT, "func(w *byte, xq *int8, xd *float32, bsums *int16, nb int) float32")
	Doc("dotQ6KAVX2 is the dot product of one Q6_K row with one Q8_K-quantized token (see genDotQ6K).")
	Pragma("noescape")
	wp := Load(Param("w"), GP64())
	xp := Load(Param("xq"), GP64())
	dp := Load(Param("xd"), GP64())
	bp := Load(Param("bsums"), GP64())
	n := Load(Param("nb"), GP64())
	acc := YMM()
	VXORPS(acc, acc, acc)
	TESTQ(n, n)
	JZ(LabelRef("k6_end"))
	Label("k6_loop")
	sc := YMM()
	VBROADCASTI128(Mem{Base: wp, Disp: 192}, sc)
	corr := YMM()
	VPMOVSXBW(Mem{Base: wp, Disp: 192}, corr)
	VPMADDWD(Mem{Base: bp}, corr, corr)
	VPSLLD(Imm(5), corr, corr)
	sumi := YMM()
	VPXOR(sumi, sumi, sumi)
	for h := 0; h < 2; h++ {
		ql0, ql1, qh := YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: wp, Disp: 64 * h}, ql0)
		VMOVDQU(Mem{Base: wp, Disp: 64*h + 32}, ql1)
		VMOVDQU(Mem{Base: wp, Disp: 128 + 32*h}, qh)
		for i := 0; i < 4; i++ {
			a, b := YMM(), YMM()
			switch i {
			case 0:
				VPAND(mask0F, ql0, a)
				VPSLLW(Imm(4), qh, b)
			case 1:
				VPAND(mask0F, ql1, a)
				VPSLLW(Imm(2), qh, b)
			case 2:
				VPSRLW(Imm(4), ql0, a)
				VPAND(mask0F, a, a)
				VMOVDQU(qh, b)
			case 3:
				VPSRLW(Imm(4), ql1, a)
				VPAND(mask0F, a, a)
				VPSRLW(Imm(2), qh, b)
			}
			VPAND(mask30, b, b)
			VPOR(b, a, a)
			p := YMM()
			VPMADDUBSW(Mem{Base: xp, Disp: 128*h + 32*i}, a, p)
			sv := YMM()
			VPSHUFB(ctrlK6.Offset(32*(4*h+i)), sc, sv)
			VPSRAW(Imm(8), sv, sv)
			VPMADDWD(sv, p, p)
			VPADDD(p, sumi, sumi)
		}
	}
	VPSUBD(corr, sumi, sumi)
	VCVTDQ2PS(sumi, sumi)
	f := YMM()
	VPBROADCASTW(Mem{Base: wp, Disp: 208}, f.AsX())
	VCVTPH2PS(f.AsX(), f)
	dx := YMM()
	VBROADCASTSS(Mem{Base: dp}, dx)
	VMULPS(dx, f, f)
	VFMADD231PS(f, sumi, acc)
	ADDQ(U32(210), wp)
	ADDQ(U32(256), xp)
	ADDQ(Imm(4), dp)
	ADDQ(Imm(32), bp)
	DECQ(n)
	JNZ(LabelRef("k6_loop"))
	Label("k6_end")
	tmp := YMM()
	hsum(acc, tmp)
	VZEROUPPER()
	Store(acc.AsX(), ReturnIndex(0))
	RET()
}

// unpackK4Scales emits the unpacking of the 12 scale bytes of the Q4_K block at wp (bytes
// 4..15) into the 8 six-bit scales (sc, one per byte) and 8 mins (mn) with 32-bit ALU ops.
func unpackK4Scales(wp Register) (sc, mn GPVirtual) {
	u0, u1, u2 := GP64(), GP64(), GP64()
	MOVL(Mem{Base: wp, Disp: 4}, u0.As32())
	MOVL(Mem{Base: wp, Disp: 8}, u1.As32())
	MOVL(Mem{Base: wp, Disp: 12}, u2.As32())
	t := GP64()
	sc, mn = GP64(), GP64()
	// sc_hi = (u2 & 0x0f0f0f0f) | ((u0>>6)&0x03030303)<<4
	MOVL(u0.As32(), t.As32())
	SHRL(Imm(6), t.As32())
	ANDL(U32(0x03030303), t.As32())
	SHLL(Imm(4), t.As32())
	MOVL(u2.As32(), sc.As32())
	ANDL(U32(0x0f0f0f0f), sc.As32())
	ORL(t.As32(), sc.As32())
	SHLQ(Imm(32), sc)
	ANDL(U32(0x3f3f3f3f), u0.As32())
	ORQ(u0, sc)
	// mn_hi = ((u2>>4)&0x0f0f0f0f) | ((u1>>6)&0x03030303)<<4
	MOVL(u1.As32(), t.As32())
	SHRL(Imm(6), t.As32())
	ANDL(U32(0x03030303), t.As32())
	SHLL(Imm(4), t.As32())
	MOVL(u2.As32(), mn.As32())
	SHRL(Imm(4), mn.As32())
	ANDL(U32(0x0f0f0f0f), mn.As32())
	ORL(t.As32(), mn.As32())
	SHLQ(Imm(32), mn)
	ANDL(U32(0x3f3f3f3f), u1.As32())
	ORQ(u1, mn)
	return sc, mn
}
