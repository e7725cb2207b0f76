// This file generates the AVX-512 VNNI Q4_0 prefill tiles over 16 interleaved rows
// (q4_0TileI16xT, T = 1..8 tokens), which read the weight pack of kernels/quant_vnni_i16.go:
// per group of 16 rows and block, the 16 fp16 scales (32 bytes), then four 64-byte registers,
// register j holding in dword lane r bytes 4j..4j+3 of row r's nibbles. Low nibbles of
// register j are elements 4j..4j+3 of each row, high nibbles elements 16+4j..16+4j+3, so after
// one shift and two masks, eight registers hold the block's 32 elements, four per lane, as
// unsigned bytes.
//
// The token comes as one 40-byte record per block (values in natural order, then the int32
// correction -8·Σx, then the float32 scale dx); each group of four values is broadcast to all
// lanes by VPDPBUSD's {1to16} memory operand. Per token and block: the int32 lanes start from
// the correction (VPBROADCASTD), eight VPDPBUSD add Σ nibble·x (so each lane holds Σ w·x of its
// row's block), one convert, one multiply by dx (broadcast from memory), one FMA with the 16
// rows' scales into the token's accumulator: 11 vector ops per 16 rows x 32 values, against
// about 5.5 per 64 for the pair tiles (q4_0TileZ4x4), and no horizontal sums: lane r is row r.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// i16Block is the bytes of one block of a 16-row group in the pack; i16Rec one token block's record.
const (
	i16Block = 288
	i16Rec   = 40
)

// tokenMem returns the address of token t's record (t < 9): base + t·s, with s3 = 3s, s5 = 5s,
// s7 = 7s.
func tokenMem(base, s, s3, s5, s7 Register, t int) Mem {
	switch t {
	case 0:
		return Mem{Base: base}
	case 1:
		return Mem{Base: base, Index: s, Scale: 1}
	case 2:
		return Mem{Base: base, Index: s, Scale: 2}
	case 3:
		return Mem{Base: base, Index: s3, Scale: 1}
	case 4:
		return Mem{Base: base, Index: s, Scale: 4}
	case 5:
		return Mem{Base: base, Index: s5, Scale: 1}
	case 6:
		return Mem{Base: base, Index: s3, Scale: 2}
	case 7:
		return Mem{Base: base, Index: s7, Scale: 1}
	}
	return Mem{Base: base, Index: s, Scale: 8}
}

// genTileI16 emits q4_0TileI16x<T>: 16 packed rows (w, at block 0 of their group) x T tokens
// (xs: token 0's first record, tokens xstride bytes apart) over nb blocks; out[t*ostride + r].
func genTileI16(T int) {
	name := fmt.Sprintf("q4_0TileI16x%d", T)
	TEXT(name, NOSPLIT, "func(w *byte, xs *byte, xstride int, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes 16 rows x %d tokens of a Q4_0 matmul on the 16-row pack with AVX-512 VNNI (see genTileI16).", name, T))
	Pragma("noescape")
	wp := Load(Param("w"), GP64())
	xp := Load(Param("xs"), GP64())
	s := Load(Param("xstride"), GP64())
	n := Load(Param("nb"), GP64())
	var s3, s5, s7 GPVirtual
	if T > 3 {
		s3 = GP64()
		LEAQ(Mem{Base: s, Index: s, Scale: 2}, s3)
	}
	if T > 5 {
		s5 = GP64()
		LEAQ(Mem{Base: s, Index: s, Scale: 4}, s5)
	}
	if T > 7 {
		s7 = GP64()
		LEAQ(Mem{Base: s3, Index: s, Scale: 4}, s7)
	}
	// Z0..Z7 accumulators, Z8..Z15 the block's weights, Z16 the scales, Z17 0x0f bytes,
	// Z18 a temporary, Z20..Z27 the tokens' integer lanes.
	acc := make([]VecPhysical, T)
	for t := range acc {
		acc[t] = zreg(t)
		VPXORD(acc[t], acc[t], acc[t])
	}
	c, dw, tmp := zreg(17), zreg(16), zreg(18)
	VPBROADCASTD(mask0F, c)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	VCVTPH2PS(Mem{Base: wp}, dw)
	wv := make([]VecPhysical, 8)
	for j := 0; j < 4; j++ {
		wv[j], wv[j+4] = zreg(8+j), zreg(12+j)
		m := Mem{Base: wp, Disp: 32 + 64*j}
		VPSRLW(Imm(4), m, tmp)
		VPANDD(m, c, wv[j])
		VPANDD(tmp, c, wv[j+4])
	}
	for t := 0; t < T; t++ {
		x := tokenMem(xp, s, s3, s5, s7, t)
		p := zreg(20 + t)
		VPBROADCASTD(x.Offset(32), p)
		for j := 0; j < 8; j++ {
			VPDPBUSD_BCST(x.Offset(4*j), wv[j], p)
		}
		VCVTDQ2PS(p, p)
		VMULPS_BCST(x.Offset(36), p, p)
		VFMADD231PS(dw, p, acc[t])
	}
	ADDQ(U32(i16Block), wp)
	ADDQ(Imm(i16Rec), xp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	op := Load(Param("out"), GP64())
	os := Load(Param("ostride"), GP64())
	SHLQ(Imm(2), os)
	for t := 0; t < T; t++ {
		VMOVUPS(acc[t], Mem{Base: op})
		if t+1 < T {
			ADDQ(os, op)
		}
	}
	VZEROUPPER()
	RET()
}
