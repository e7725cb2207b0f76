// This file generates the AVX-512 VNNI Q6_K GEMM kernels: one weight row x T tokens (T <= 8).
//
// Per super-block, each half h (128 values) gives two 512-bit registers of 6-bit values 0..63 in
// element order: [ql & 15 | (qh << 4) & 48, ql' & 15 | (qh << 2) & 48] for values 128h..+63 and
// [ql >> 4 | qh & 48, ql' >> 4 | (qh >> 2) & 48] for 128h+64..+127 (ql = bytes 64h..64h+31,
// ql' = 64h+32..64h+63, qh = bytes 128+32h..). VPMADDUBSW with the token's int8 values (int16
// pairs, at most 2·63·127), VPDPWSSD with the sub-block scales as int16 words (VPERMW from the
// 16 sign-extended scales) into int32 lanes. The -32 offset is applied once per super-block:
// sumi -= 32·(scales · bsums) (VPMADDWD over the record's 16 sums of 16, read as 64 bytes
// with 32 zero bytes after them). Then acc += float(sumi) · (d·dx).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var permK6Z Mem // VPERMW indexes (4 x 32 words: chunk c word w -> scale 4c + w/8)

func constsK6Z() {
	permK6Z = GLOBL("q_permk6z", RODATA|NOPTR)
	for c := 0; c < 4; c++ {
		for w := 0; w < 32; w++ {
			DATA(64*c+2*w, U16(uint16(4*c+w/8)))
		}
	}
}

// genTileK6Z emits q6KTileZ1x<T>: one Q6_K row (nb super-blocks at w) x T tokens (records at
// xr, tokens xstride bytes apart), out[t*ostride].
func genTileK6Z(T int) {
	name := fmt.Sprintf("q6KTileZ1x%d", T)
	TEXT(name, NOSPLIT, "func(w *byte, xr *int8, xstride int, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes one Q6_K row x %d tokens with AVX-512 VNNI (see genTileK6Z).", name, T))
	Pragma("noescape")
	kt := loadKTile(T)
	wp, xp, n, tok := kt.wp, kt.xp, kt.n, kt.tok
	for t := 0; t < T; t++ {
		VPXORD(zreg(8+t), zreg(8+t), zreg(8+t))
	}
	sc16, q6, scv, a, h, ty, t2, p, g, dw, dx, c0f, c30 := Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28
	VPBROADCASTD(mask0F, c0f)
	VPBROADCASTD(mask30, c30)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	kt.nextTokens()
	VPMOVSXBW(Mem{Base: wp, Disp: 192}, sc16.AsY()) // 16 scales as int16, upper half zero
	VPBROADCASTW(Mem{Base: wp, Disp: 208}, dw)
	VCVTPH2PS(dw.AsY(), dw)
	for t := 0; t < T; t++ {
		VPXORD(zreg(t), zreg(t), zreg(t))
	}
	for half := 0; half < 2; half++ {
		qh := Mem{Base: wp, Disp: 128 + 32*half}
		VMOVDQU64(Mem{Base: wp, Disp: 64 * half}, a)
		for sub := 0; sub < 2; sub++ {
			ch := 2*half + sub
			if sub == 0 {
				VMOVDQU64(qh, ty.AsY())
				VPSLLW(Imm(2), ty.AsY(), t2.AsY())
				VPSLLW(Imm(4), ty.AsY(), ty.AsY())
				VINSERTI64X4(Imm(1), t2.AsY(), ty, h)
				VPANDD(c0f, a, q6)
			} else {
				VMOVDQU64(qh, ty.AsY())
				VPSRLW(Imm(2), ty.AsY(), t2.AsY())
				VINSERTI64X4(Imm(1), t2.AsY(), ty, h)
				VPSRLW(Imm(4), a, q6)
				VPANDD(c0f, q6, q6)
			}
			VPANDD(c30, h, h)
			VPORD(h, q6, q6)
			VMOVDQU64(permK6Z.Offset(64*ch), Z29)
			VPERMW(sc16, Z29, scv)
			for t := 0; t < T; t++ {
				VPMADDUBSW(tok(t).Offset(64*ch), q6, p)
				VPDPWSSD(scv, p, zreg(t))
			}
		}
	}
	for t := 0; t < T; t++ {
		m := tok(t)
		VPMADDWD(m.Offset(kRecSum16), sc16, g)
		VPSLLD(Imm(5), g, g)
		VPSUBD(g, zreg(t), zreg(t))
		VCVTDQ2PS(zreg(t), zreg(t))
		VBROADCASTSS(m.Offset(kRecD), dx)
		VMULPS(dx, dw, g)
		VFMADD231PS(g, zreg(t), zreg(8+t))
	}
	ADDQ(U32(210), wp)
	ADDQ(U32(kRecBytes), xp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	op := Load(Param("out"), GP64())
	os := Load(Param("ostride"), GP64())
	SHLQ(Imm(2), os)
	for t := 0; t < T; t++ {
		hsum16(zreg(8+t), Z29)
		VMOVSS(zreg(8+t).AsX(), Mem{Base: op})
		if t+1 < T {
			ADDQ(os, op)
		}
	}
	VZEROUPPER()
	RET()
}
