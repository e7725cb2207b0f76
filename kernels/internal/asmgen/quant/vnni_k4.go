// This file generates the AVX-512 VNNI Q4_K GEMM kernels: one weight row x T tokens (T <= 8),
// so each super-block's unpacked nibbles and scales are reused for T tokens.
//
// Per 64 values (chunk c of a super-block) the 32 nibble bytes become one 512-bit register in
// natural element order (low nibbles = sub-block 2c, high nibbles = sub-block 2c+1), multiplied
// with the token's 64 int8 values by VPMADDUBSW (int16 pair sums, at most 2·15·127) and
// accumulated with the sub-block scales by VPDPWSSD (int16 x int16 pairs into int32 lanes;
// lanes 0..7 carry sub-block 2c, lanes 8..15 sub-block 2c+1). Per super-block:
//
//	acc += float(sumi) * (d*dx);  acc[0..3] -= float(mins·bsum8 pairs) * (dmin*dx)
//
// The tokens come as records of 384 bytes per super-block (quant_vnni_k.go): 256 int8 values
// at 0, the 16 int16 sums of each 16 at 256, 32 zero bytes, the 8 int16 sums of each 32 at
// 320, the float32 scale dx at 336, padding.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var ctrlK4Z Mem // 4 x 64 bytes: VPSHUFB controls, chunk c: words 0..15 = byte 2c, 16..31 = byte 2c+1

func constsK4Z() {
	ctrlK4Z = GLOBL("q_ctrlk4z", RODATA|NOPTR)
	for c := 0; c < 4; c++ {
		for i := 0; i < 32; i++ {
			DATA(64*c+2*i, U8(2*c+i/16))
			DATA(64*c+2*i+1, U8(0x80))
		}
	}
}

// kRecBytes is the size of one token's record per super-block.
const (
	kRecBytes = 384
	kRecSum16 = 256 // 16 x int16
	kRecSum32 = 320 // 8 x int16
	kRecD     = 336 // float32
)

// kTile holds the arguments every one-row x T-token K-quant tile (q4KTileZ1x<T>, q6KTileZ1x<T>)
// takes: weights wp, token records xp (tokens xs bytes apart; tokens 4..7 are addressed from
// xp4 = xp + 4*xs, set by nextTokens at each super-block), nb super-blocks n.
type kTile struct {
	T             int
	wp, xp, xs, n Register
	xs3, xp4      GPVirtual
}

// loadKTile loads the tile's arguments.
func loadKTile(T int) *kTile {
	k := &kTile{T: T}
	k.wp = Load(Param("w"), GP64())
	k.xp = Load(Param("xr"), GP64())
	k.xs = Load(Param("xstride"), GP64())
	k.n = Load(Param("nb"), GP64())
	if T > 3 {
		k.xs3 = GP64()
		LEAQ(Mem{Base: k.xs, Index: k.xs, Scale: 2}, k.xs3)
	}
	if T > 4 {
		k.xp4 = GP64()
	}
	return k
}

// tok addresses token t's record of the current super-block.
func (k *kTile) tok(t int) Mem {
	base := k.xp
	if t >= 4 {
		base, t = k.xp4, t-4
	}
	switch t {
	case 0:
		return Mem{Base: base}
	case 1:
		return Mem{Base: base, Index: k.xs, Scale: 1}
	case 2:
		return Mem{Base: base, Index: k.xs, Scale: 2}
	}
	return Mem{Base: base, Index: k.xs3, Scale: 1}
}

// nextTokens sets xp4 for the current super-block (at the top of the loop).
func (k *kTile) nextTokens() {
	if k.T > 4 {
		LEAQ(Mem{Base: k.xp, Index: k.xs, Scale: 4}, k.xp4)
	}
}

// genTileK4Z emits q4KTileZ1x<T>: one Q4_K row (nb super-blocks at w) x T tokens (records at
// xr, tokens xstride bytes apart), out[t*ostride].
func genTileK4Z(T int) {
	name := fmt.Sprintf("q4KTileZ1x%d", T)
	TEXT(name, NOSPLIT, "func(w *byte, xr *int8, xstride int, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes one Q4_K row x %d tokens with AVX-512 VNNI (see genTileK4Z).", name, T))
	Pragma("noescape")
	kt := loadKTile(T)
	wp, xp, n, tok := kt.wp, kt.xp, kt.n, kt.tok
	// Z0..7 int sums, Z8..15 float accumulators (token t in Z t and Z 8+t).
	for t := 0; t < T; t++ {
		VPXORD(zreg(8+t), zreg(8+t), zreg(8+t))
	}
	scB, mins, zd, zm, z, scs, y, ty, p, g, s, dx, c := Z16, X17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28
	VPBROADCASTD(mask0F, c)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	kt.nextTokens()
	sc, mn := unpackK4Scales(wp)
	VPBROADCASTQ(sc, scB)
	VMOVQ(mn, mins)
	VPMOVZXBW(mins, mins)
	VPBROADCASTW(Mem{Base: wp}, zd)
	VCVTPH2PS(zd.AsY(), zd)
	VPBROADCASTW(Mem{Base: wp, Disp: 2}, zm)
	VCVTPH2PS(zm.AsY(), zm)
	for t := 0; t < T; t++ {
		VPXORD(zreg(t), zreg(t), zreg(t))
	}
	for ch := 0; ch < 4; ch++ {
		VMOVDQU64(Mem{Base: wp, Disp: 16 + 32*ch}, y.AsY())
		VPSRLW(Imm(4), y.AsY(), ty.AsY())
		VINSERTI64X4(Imm(1), ty.AsY(), y, z)
		VPANDD(c, z, z)
		VPSHUFB(ctrlK4Z.Offset(64*ch), scB, scs)
		for t := 0; t < T; t++ {
			VPMADDUBSW(tok(t).Offset(64*ch), z, p)
			VPDPWSSD(scs, p, zreg(t))
		}
	}
	for t := 0; t < T; t++ {
		m := tok(t)
		VCVTDQ2PS(zreg(t), zreg(t))
		VBROADCASTSS(m.Offset(kRecD), dx)
		VMULPS(dx, zd, s)
		VFMADD231PS(s, zreg(t), zreg(8+t))
		VPMADDWD(m.Offset(kRecSum32), mins, g.AsX())
		VCVTDQ2PS(g.AsX(), g.AsX())
		VMULPS(dx, zm, s)
		VFNMADD231PS(s, g, zreg(8+t))
	}
	ADDQ(U32(144), wp)
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
