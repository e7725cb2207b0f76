// This file generates the AVX-512 VNNI kernels for Q8_0 and Q4_0 weights (used when the CPU
// has AVX512F/BW/VL and AVX512_VNNI). They work on block pairs: one 512-bit register holds two
// 32-value blocks of a weight row, and one VPDPBUSD (unsigned bytes x signed bytes, four
// products summed into each int32 lane) replaces the VPMADDUBSW/VPMADDWD pair of the AVX2
// kernels, for twice the width.
//
// VPDPBUSD needs one unsigned operand, and the weights are made unsigned:
//
//	Q8_0: u = w XOR 0x80 = w + 128 (0..255), so Σ u·x = Σ w·x + 128·Σ x
//	Q4_0: u = the nibble (0..15),          so Σ u·x = Σ (w+8)·x  =  Σ w·x + 8·Σ x
//
// and each int32 accumulator starts from the token's correction (-128·Σx or -8·Σx of the block,
// precomputed when the activations are quantized; see quant_act_vnni.go), so the lanes hold
// exactly Σ w·x. Lane layouts (16 int32 lanes per block pair b, b+1):
//
//	Q8_0: lanes 0..7 = block b (elements 4l..4l+3), lanes 8..15 = block b+1; activations in
//	      their natural order (64 consecutive int8).
//	Q4_0: lanes 0..3 = b elements 0..15, 4..7 = b+1 elements 0..15, 8..11 = b elements 16..31,
//	      12..15 = b+1 elements 16..31 (low nibbles, then high nibbles); activations in the
//	      matching pair order x_b[0:16] x_b1[0:16] x_b[16:32] x_b1[16:32].
//
// Per token and pair the activations come with 16 scales (dx of the lane's block) and 16 int32
// corrections (the block's correction in its first lane, zeros elsewhere). Then per lane
// acc += (float(sumi) * dw) * dx, the FMA taking dx from memory.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// zPrepRow loads block pair (b, b+1) of the weight row at wm as unsigned bytes in the lane
// layout above, and its 16 lane scales dw (as float32).
// The vector registers are physical (the kernels use up to 28 of the 32), a, b, y, t temporaries.
func zPrepRow(q4 bool, wm Mem, c, wv, dw, a, b, y, t VecPhysical) {
	VPBROADCASTW(wm, a.AsX())
	if q4 {
		VPBROADCASTW(wm.Offset(18), b.AsX())
		VPUNPCKLQDQ(b.AsX(), a.AsX(), a.AsX()) // [dw_b x4, dw_b1 x4] as fp16
		VINSERTI32X4(Imm(1), a.AsX(), a.AsY(), a.AsY())
		VMOVDQU64(wm.Offset(2), y.AsX())
		VINSERTI32X4(Imm(1), wm.Offset(20), y.AsY(), y.AsY())
		VPSRLW(Imm(4), y.AsY(), t.AsY())
		VINSERTI64X4(Imm(1), t.AsY(), y.AsZ(), wv)
		VPANDD(c, wv, wv)
	} else {
		VPBROADCASTW(wm.Offset(34), b.AsX())
		VINSERTI32X4(Imm(1), b.AsX(), a.AsY(), a.AsY()) // [dw_b x8, dw_b1 x8] as fp16
		VMOVDQU64(wm.Offset(2), y.AsY())
		VINSERTI64X4(Imm(1), wm.Offset(36), y.AsZ(), wv)
		VPXORD(c, wv, wv)
	}
	VCVTPH2PS(a.AsY(), dw)
}

// zreg returns physical register Zi.
func zreg(i int) VecPhysical {
	return []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}[i]
}

// hsum16 reduces the 16 floats of z to lane 0 (clobbers t), with EVEX-encodable instructions
// only (the registers may be Z16..Z31): lanes l+8 onto l, l+4 onto l, then
// (x0+x1) + (x2+x3) as hsum does.
func hsum16(z, t VecPhysical) {
	VEXTRACTF64X4(Imm(1), z, t.AsY())
	VADDPS(t.AsY(), z.AsY(), z.AsY())
	VEXTRACTF32X4(Imm(1), z.AsY(), t.AsX())
	VADDPS(t.AsX(), z.AsX(), z.AsX())
	VMOVSHDUP(z.AsX(), t.AsX())
	VADDPS(t.AsX(), z.AsX(), z.AsX()) // [x0+x1, ., x2+x3, .]
	VMOVHLPS(z.AsX(), t.AsX(), t.AsX())
	VADDSS(t.AsX(), z.AsX(), z.AsX())
}

// genTileZ emits an R-rows x T-tokens VNNI tile kernel over npairs block pairs. w points at row
// 0 (rows wstride bytes apart); xs, xd and corr at token 0's activations, 16 lane scales and 16
// lane corrections per pair, each token xstride bytes after the previous one in all three
// arrays (xstride = k). out[t*ostride + r].
func genTileZ(q4 bool, R, T int) {
	kind, bb := "q8_0", 34
	if q4 {
		kind, bb = "q4_0", 18
	}
	name := fmt.Sprintf("%sTileZ%dx%d", kind, R, T)
	TEXT(name, NOSPLIT, "func(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, npairs int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes a %d-row x %d-token tile of a %s matmul with AVX-512 VNNI (see genTileZ).", name, R, T, kind))
	Pragma("noescape")
	wp := Load(Param("w"), GP64())
	ws := Load(Param("wstride"), GP64())
	xp := Load(Param("xs"), GP64())
	xs := Load(Param("xstride"), GP64())
	dp := Load(Param("xd"), GP64())
	cp := Load(Param("corr"), GP64())
	n := Load(Param("npairs"), GP64())
	var ws3, xs3 GPVirtual
	if R > 3 {
		ws3 = GP64()
		LEAQ(Mem{Base: ws, Index: ws, Scale: 2}, ws3)
	}
	if T > 3 {
		xs3 = GP64()
		LEAQ(Mem{Base: xs, Index: xs, Scale: 2}, xs3)
	}
	// Z0..Z15 accumulators, Z16..19 weight pairs, Z20..23 their scales, Z24 the byte constant,
	// Z25 the token, Z26 the product, Z27..Z30 temporaries.
	acc := make([][]VecPhysical, R)
	for r := range acc {
		acc[r] = make([]VecPhysical, T)
		for t := range acc[r] {
			acc[r][t] = zreg(4*r + t)
			VPXORD(acc[r][t], acc[r][t], acc[r][t])
		}
	}
	c := zreg(24) // 0x80 (Q8_0) or 0x0f (Q4_0) in every byte
	if q4 {
		VPBROADCASTD(mask0F, c)
	} else {
		VPBROADCASTD(mask80, c)
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	wv := make([]VecPhysical, R)
	dw := make([]VecPhysical, R)
	for r := 0; r < R; r++ {
		wv[r], dw[r] = zreg(16+r), zreg(20+r)
		zPrepRow(q4, strided(wp, ws, ws3, r), c, wv[r], dw[r], zreg(27), zreg(28), zreg(29), zreg(30))
	}
	for t := 0; t < T; t++ {
		xv := zreg(25)
		VMOVDQU64(strided(xp, xs, xs3, t), xv)
		for r := 0; r < R; r++ {
			p := zreg(26)
			VMOVDQU64(strided(cp, xs, xs3, t), p)
			VPDPBUSD(xv, wv[r], p) // p += Σ u·x per lane (signed x, unsigned u)
			VCVTDQ2PS(p, p)
			VMULPS(dw[r], p, p)
			VFMADD231PS(strided(dp, xs, xs3, t), p, acc[r][t])
		}
	}
	ADDQ(Imm(uint64(2*bb)), wp)
	ADDQ(Imm(64), xp)
	ADDQ(Imm(64), dp)
	ADDQ(Imm(64), cp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	op := Load(Param("out"), GP64())
	os := Load(Param("ostride"), GP64())
	SHLQ(Imm(2), os)
	for t := 0; t < T; t++ {
		for r := 0; r < R; r++ {
			hsum16(acc[r][t], zreg(27))
			VMOVSS(acc[r][t].AsX(), Mem{Base: op, Disp: 4 * r})
		}
		if t+1 < T {
			ADDQ(os, op)
		}
	}
	VZEROUPPER()
	RET()
}
