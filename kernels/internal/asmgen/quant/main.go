// Command quant generates the AVX2 assembly for llmcloud's quantized matmul kernels
// (kernels/quant_amd64.s and its Go declarations kernels/quant_stub_amd64.go).
//
//	cd kernels/internal/asmgen/quant && go run . -out ../../../quant_amd64.s -stubs ../../../quant_stub_amd64.go -pkg kernels
//
// (kernels/quant_amd64.go carries the go:generate line.) The kernels and their data layouts are
// described in docs/kernels-quant.md; every kernel has a plain-Go twin in kernels/quant_ref.go
// that computes the same integer math.
package main

import (
	"flag"
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

var (
	ones16  Mem // 16 x int16 1
	mask0F  Mem // 32 x 0x0f
	mask30  Mem // 32 x 0x30
	mask80  Mem // 4 x 0x80
	absMask Mem // 0x7fffffff
	f127    Mem // float32 127
	permQ8  Mem // VPERMD order that undoes the in-lane interleave of VPACKSSDW/VPACKSSWB
	ctrlK4  Mem // 8 x 32 bytes: VPSHUFB controls broadcasting byte j of a qword as a word
	ctrlK6  Mem // 8 x 32 bytes: lane0 all 2g, lane1 all 2g+1
	lane04  Mem // int32 mask of lanes 0 and 4
)

func consts() {
	ones16 = GLOBL("q_ones16", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(2*i, U16(1))
	}
	mask0F = GLOBL("q_mask0f", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(i, U8(0x0f))
	}
	mask30 = GLOBL("q_mask30", RODATA|NOPTR)
	for i := 0; i < 32; i++ {
		DATA(i, U8(0x30))
	}
	mask80 = GLOBL("q_mask80", RODATA|NOPTR)
	DATA(0, U32(0x80808080))
	absMask = GLOBL("q_absmask", RODATA|NOPTR)
	DATA(0, U32(0x7fffffff))
	f127 = GLOBL("q_f127", RODATA|NOPTR)
	DATA(0, U32(0x42fe0000)) // float32 127
	permQ8 = GLOBL("q_permq8", RODATA|NOPTR)
	for i, v := range []uint32{0, 4, 1, 5, 2, 6, 3, 7} {
		DATA(4*i, U32(v))
	}
	lane04 = GLOBL("q_lane04", RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		v := uint32(0)
		if i%4 == 0 {
			v = 0xffffffff
		}
		DATA(4*i, U32(v))
	}
	ctrlK4 = GLOBL("q_ctrlk4", RODATA|NOPTR)
	for j := 0; j < 8; j++ {
		for i := 0; i < 16; i++ {
			DATA(32*j+2*i, U8(j))
			DATA(32*j+2*i+1, U8(0x80))
		}
	}
	ctrlK6 = GLOBL("q_ctrlk6", RODATA|NOPTR)
	for g := 0; g < 8; g++ {
		for i := 0; i < 32; i++ {
			DATA(32*g+i, U8(2*g+i/16))
		}
	}
}

// prefetchAhead is how far ahead (bytes) of each weight row the Q8_0 decode kernels prefetch:
// the rows of a tile are read as 4-8 interleaved short streams, which the hardware prefetcher
// alone does not keep ahead of. Measured on the Zen 1 box (5632x2048 from DRAM, A/B in one run):
// 512 gave +15-35% over none and beat 1024; Q4_0 liked 1536 (about equal to 3072, better than 512).
var prefetchAhead = 512

// prefetchAheadQ4 is the same for the Q4_0 decode kernels (18-byte blocks).
var prefetchAheadQ4 = 1536

func main() {
	flag.IntVar(&prefetchAhead, "prefetch", prefetchAhead, "Q8_0 decode prefetch distance in bytes (0: none)")
	flag.IntVar(&prefetchAheadQ4, "prefetch-q4", prefetchAheadQ4, "Q4_0 decode prefetch distance in bytes (0: none)")
	flag.Parse()
	consts()
	genQuantQ8_0()
	for _, rt := range [][2]int{{8, 1}, {4, 1}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {1, 1}, {1, 2}, {1, 3}, {1, 4}} {
		genTile(false, rt[0], rt[1])
		if rt[0] < 4 { // Q4_0 decode uses genQ4Pairs
			genTile(true, rt[0], rt[1])
		}
	}
	genQ4Pairs(2)
	genQ4Pairs(4)
	genQ4Rows()
	genQ8Rows()
	genDotQ4K()
	genDotQ6K()
	for _, q4 := range []bool{false, true} {
		for r := 1; r <= 4; r++ {
			for t := 1; t <= 4; t++ {
				genTileZ(q4, r, t)
			}
		}
	}
	Generate()
}

// hsum reduces the 8 floats of v to lane 0 of v's xmm half (clobbers t).
func hsum(v, t VecVirtual) {
	VEXTRACTF128(Imm(1), v, t.AsX())
	VADDPS(t.AsX(), v.AsX(), v.AsX())
	VHADDPS(v.AsX(), v.AsX(), v.AsX())
	VHADDPS(v.AsX(), v.AsX(), v.AsX())
}

// genQuantQ8_0 emits the activation quantizer to blocks of 32: d = fp16(amax/127) stored as
// float32, q = round-half-even(x * (127/amax)).
func genQuantQ8_0() {
	TEXT("quantQ8_0AVX2", NOSPLIT, "func(x *float32, qs *int8, d *float32, nb int)")
	Doc("quantQ8_0AVX2 quantizes nb blocks of 32 floats at x to int8 qs and float32 (fp16-rounded) scales d.")
	Pragma("noescape")
	xp := Load(Param("x"), GP64())
	qp := Load(Param("qs"), GP64())
	dp := Load(Param("d"), GP64())
	n := Load(Param("nb"), GP64())
	TESTQ(n, n)
	JZ(LabelRef("q8done"))
	am := YMM()
	VBROADCASTSS(absMask, am)
	Label("q8loop")
	v := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for i := range v {
		VMOVUPS(Mem{Base: xp, Disp: 32 * i}, v[i])
	}
	a, b := YMM(), YMM()
	VANDPS(am, v[0], a)
	VANDPS(am, v[1], b)
	VMAXPS(b, a, a)
	VANDPS(am, v[2], b)
	VMAXPS(b, a, a)
	VANDPS(am, v[3], b)
	VMAXPS(b, a, a)
	VEXTRACTF128(Imm(1), a, b.AsX())
	VMAXPS(b.AsX(), a.AsX(), a.AsX())
	VMOVHLPS(a.AsX(), a.AsX(), b.AsX())
	VMAXPS(b.AsX(), a.AsX(), a.AsX())
	VMOVSHDUP(a.AsX(), b.AsX())
	VMAXSS(b.AsX(), a.AsX(), a.AsX()) // a[0] = amax
	c := XMM()
	VMOVSS(f127, c)
	dv := XMM()
	VDIVSS(c, a.AsX(), dv) // amax/127
	VCVTPS2PH(Imm(0), dv, dv)
	VCVTPH2PS(dv, dv)
	VMOVSS(dv, Mem{Base: dp})
	id := XMM()
	VDIVSS(a.AsX(), c, id) // 127/amax
	z := XMM()
	VXORPS(z, z, z)
	VCMPSS(Imm(4), z, a.AsX(), z) // amax != 0
	VANDPS(z, id, id)
	VBROADCASTSS(id, b)
	for i := range v {
		VMULPS(b, v[i], v[i])
		VCVTPS2DQ(v[i], v[i])
	}
	VPACKSSDW(v[1], v[0], v[0])
	VPACKSSDW(v[3], v[2], v[2])
	VPACKSSWB(v[2], v[0], v[0])
	VMOVDQU(permQ8, b)
	VPERMD(v[0], b, v[0])
	VMOVDQU(v[0], Mem{Base: qp})
	ADDQ(Imm(128), xp)
	ADDQ(Imm(32), qp)
	ADDQ(Imm(4), dp)
	DECQ(n)
	JNZ(LabelRef("q8loop"))
	Label("q8done")
	VZEROUPPER()
	RET()
}

// genTile emits an R-rows x T-tokens kernel for Q8_0 (q4 false) or Q4_0 (q4 true) weights
// against Q8_0-quantized activations. Per block, row r, token t:
//
//	Q8_0: sumi = Σ w*x via VPMADDUBSW(|w|, x·sign(w))
//	Q4_0: sumi = Σ nib*x - 8Σx via VPMADDUBSW(nib, x) + the precomputed correction corr[t]
//	acc[r][t] += (float(sumi) * dw) * dx   (8 lanes, reduced at the end)
//
// w points at row 0 block 0 (rows wstride bytes apart); xq at token 0 (tokens xstride bytes
// apart, xstride = 32*nb); xd at the token-0 scales (tokens xstride/8 bytes apart); corr (Q4_0)
// at token 0's corrections (8 int32 per block, tokens xstride bytes apart). out[t*ostride+r].
func genTile(q4 bool, R, T int) {
	kind, bb := "q8_0", 34
	if q4 {
		kind, bb = "q4_0", 18
	}
	name := fmt.Sprintf("%sTile%dx%d", kind, R, T)
	TEXT(name, NOSPLIT, "func(w *byte, wstride int, xq *int8, xstride int, xd *float32, corr *int32, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes a %d-row x %d-token tile of a %s matmul (see genTile).", name, R, T, kind))
	Pragma("noescape")
	wp := Load(Param("w"), GP64())
	ws := Load(Param("wstride"), GP64())
	xp := Load(Param("xq"), GP64())
	xs := Load(Param("xstride"), GP64())
	dp := Load(Param("xd"), GP64())
	var cp Register
	if q4 {
		cp = Load(Param("corr"), GP64())
	}
	n := Load(Param("nb"), GP64())
	var ws3, xs3, ds, ds3, wp4 GPVirtual
	if R > 3 {
		ws3 = GP64()
		LEAQ(Mem{Base: ws, Index: ws, Scale: 2}, ws3)
	}
	if R > 4 {
		wp4 = GP64()
		LEAQ(Mem{Base: wp, Index: ws, Scale: 4}, wp4)
	}
	if T > 3 {
		xs3 = GP64()
		LEAQ(Mem{Base: xs, Index: xs, Scale: 2}, xs3)
	}
	if T > 1 {
		ds = GP64()
		MOVQ(xs, ds)
		SHRQ(Imm(3), ds)
		if T > 3 {
			ds3 = GP64()
			LEAQ(Mem{Base: ds, Index: ds, Scale: 2}, ds3)
		}
	}
	idx := func(base, s, s3 Register, i int) Mem {
		switch i {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: s, Scale: 1}
		case 2:
			return Mem{Base: base, Index: s, Scale: 2}
		}
		return Mem{Base: base, Index: s3, Scale: 1}
	}
	wrow := func(r int) Mem {
		if r >= 4 {
			return idx(wp4, ws, ws3, r-4)
		}
		return idx(wp, ws, ws3, r)
	}
	acc := make([][]VecVirtual, R)
	for r := range acc {
		acc[r] = make([]VecVirtual, T)
		for t := range acc[r] {
			acc[r][t] = YMM()
			VXORPS(acc[r][t], acc[r][t], acc[r][t])
		}
	}
	ones := YMM()
	VMOVDQU(ones16, ones)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	wv := make([]VecVirtual, R) // |w| (Q8_0) or unpacked nibbles (Q4_0)
	dw := make([]VecVirtual, R)
	prep := func(r int) {
		wm := wrow(r)
		if T == 1 && prefetchAhead > 0 {
			PREFETCHT0(wm.Offset(prefetchAhead))
		}
		wv[r] = YMM()
		if q4 {
			lo, hi := XMM(), XMM()
			VMOVDQU(wm.Offset(2), lo)
			VPSRLW(Imm(4), lo, hi)
			VINSERTI128(Imm(1), hi, lo.AsY(), wv[r])
			VPAND(mask0F, wv[r], wv[r])
		} else {
			VPABSB(wm.Offset(2), wv[r])
		}
		dw[r] = YMM()
		VPBROADCASTW(wm, dw[r].AsX())
		VCVTPH2PS(dw[r].AsX(), dw[r])
	}
	// With one token, each row is prepared right before its use (fewer live registers, so
	// up to 8 rows fit); with several, all rows are prepared once and reused per token.
	if T > 1 {
		for r := 0; r < R; r++ {
			prep(r)
		}
	}
	var xr VecVirtual
	if T == 1 && !q4 {
		xr = YMM()
		VMOVDQU(Mem{Base: xp}, xr)
	}
	for t := 0; t < T; t++ {
		s := YMM()
		if t == 0 {
			VBROADCASTSS(Mem{Base: dp}, s)
		} else {
			VBROADCASTSS(idx(dp, ds, ds3, t), s)
		}
		xm := idx(xp, xs, xs3, t)
		for r := 0; r < R; r++ {
			if T == 1 {
				prep(r)
			}
			wm := wrow(r)
			p := YMM()
			if q4 {
				VPMADDUBSW(xm, wv[r], p)
			} else {
				if xr != nil {
					VPSIGNB(wm.Offset(2), xr, p)
				} else {
					VMOVDQU(xm, p)
					VPSIGNB(wm.Offset(2), p, p)
				}
				VPMADDUBSW(p, wv[r], p)
			}
			VPMADDWD(ones, p, p)
			if q4 {
				VPADDD(idx(cp, xs, xs3, t), p, p)
			}
			VCVTDQ2PS(p, p)
			VMULPS(dw[r], p, p)
			VFMADD231PS(s, p, acc[r][t])
		}
	}
	ADDQ(Imm(uint64(bb)), wp)
	if R > 4 {
		ADDQ(Imm(uint64(bb)), wp4)
	}
	ADDQ(Imm(32), xp)
	ADDQ(Imm(4), dp)
	if q4 {
		ADDQ(Imm(32), cp)
	}
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	op := Load(Param("out"), GP64())
	os := Load(Param("ostride"), GP64())
	SHLQ(Imm(2), os)
	tmp := YMM()
	for t := 0; t < T; t++ {
		for r := 0; r < R; r++ {
			hsum(acc[r][t], tmp)
			VMOVSS(acc[r][t].AsX(), Mem{Base: op, Disp: 4 * r})
		}
		if t+1 < T {
			ADDQ(os, op)
		}
	}
	VZEROUPPER()
	RET()
}

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
	u0, u1, u2 := GP64(), GP64(), GP64()
	MOVL(Mem{Base: wp, Disp: 4}, u0.As32())
	MOVL(Mem{Base: wp, Disp: 8}, u1.As32())
	MOVL(Mem{Base: wp, Disp: 12}, u2.As32())
	sc, mn, t := GP64(), GP64(), GP64()
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
	dx := YMM()
	VBROADCASTSS(Mem{Base: dp}, dx)
	// mins
	m := XMM()
	MOVQ(mn, m)
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
	MOVQ(sc, s.AsX())
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

// genQ4Pairs emits a decode (one token) Q4_0 kernel over 2*pairs rows that packs two rows into
// each 256-bit register: [row r nibbles | row r+1 nibbles], multiplied against the token's
// block halves broadcast to both 128-bit lanes. Per row pair and block this needs one
// VPMADDWD and one float conversion instead of two. Lanes 0..3 of a pair accumulator belong
// to row r, lanes 4..7 to row r+1; lane j holds elements 4j..4j+3 and 16+4j..16+4j+3.
func genQ4Pairs(pairs int) {
	R := 2 * pairs
	name := fmt.Sprintf("q4_0Pairs%dx1", R)
	TEXT(name, NOSPLIT, "func(w *byte, wstride int, xq *int8, xstride int, xd *float32, corr *int32, nb int, out *float32, ostride int)")
	Doc(fmt.Sprintf("%s computes %d rows x 1 token of a q4_0 matmul, two rows per register (see genQ4Pairs).", name, R))
	Pragma("noescape")
	wp := Load(Param("w"), GP64())
	ws := Load(Param("wstride"), GP64())
	xp := Load(Param("xq"), GP64())
	dp := Load(Param("xd"), GP64())
	cp := Load(Param("corr"), GP64())
	n := Load(Param("nb"), GP64())
	ws3 := GP64()
	LEAQ(Mem{Base: ws, Index: ws, Scale: 2}, ws3)
	var wp4 GPVirtual
	if R > 4 {
		wp4 = GP64()
		LEAQ(Mem{Base: wp, Index: ws, Scale: 4}, wp4)
	}
	wrow := func(r int) Mem {
		base := wp
		if r >= 4 {
			base, r = wp4, r-4
		}
		switch r {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: ws, Scale: 1}
		case 2:
			return Mem{Base: base, Index: ws, Scale: 2}
		}
		return Mem{Base: base, Index: ws3, Scale: 1}
	}
	acc := make([]VecVirtual, pairs)
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	ones := YMM()
	VMOVDQU(ones16, ones)
	TESTQ(n, n)
	JZ(LabelRef(name + "_end"))
	Label(name + "_loop")
	xlo, xhi, dx, cv := YMM(), YMM(), YMM(), YMM()
	VBROADCASTI128(Mem{Base: xp}, xlo)
	VBROADCASTI128(Mem{Base: xp, Disp: 16}, xhi)
	VBROADCASTSS(Mem{Base: dp}, dx)
	VPBROADCASTD(Mem{Base: cp}, cv)
	VPAND(lane04, cv, cv)
	for i := 0; i < pairs; i++ {
		ra, rb := wrow(2*i), wrow(2*i+1)
		if prefetchAheadQ4 > 0 {
			PREFETCHT0(ra.Offset(prefetchAheadQ4))
			PREFETCHT0(rb.Offset(prefetchAheadQ4))
		}
		q, hi, p := YMM(), YMM(), YMM()
		VMOVDQU(ra.Offset(2), q.AsX())
		VINSERTI128(Imm(1), rb.Offset(2), q, q)
		VPSRLW(Imm(4), q, hi)
		VPAND(mask0F, q, q)
		VPAND(mask0F, hi, hi)
		VPMADDUBSW(xlo, q, p)
		VPMADDUBSW(xhi, hi, hi)
		VPADDW(hi, p, p)
		VPMADDWD(ones, p, p)
		VPADDD(cv, p, p)
		VCVTDQ2PS(p, p)
		s, s2 := XMM(), XMM()
		VPBROADCASTW(ra, s)
		VPBROADCASTW(rb, s2)
		VPBLENDD(Imm(0xc), s2, s, s)
		VCVTPH2PS(s, s.AsY())
		VMULPS(s.AsY(), p, p)
		VFMADD231PS(dx, p, acc[i])
	}
	ADDQ(Imm(18), wp)
	if R > 4 {
		ADDQ(Imm(18), wp4)
	}
	ADDQ(Imm(32), xp)
	ADDQ(Imm(4), dp)
	ADDQ(Imm(32), cp)
	DECQ(n)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_end")
	op := Load(Param("out"), GP64())
	for i := 0; i < pairs; i++ {
		t := XMM()
		VEXTRACTF128(Imm(1), acc[i], t)
		VHADDPS(t, acc[i].AsX(), acc[i].AsX()) // [a0+a1, a2+a3, b0+b1, b2+b3]
		VHADDPS(acc[i].AsX(), acc[i].AsX(), acc[i].AsX())
		VMOVSS(acc[i].AsX(), Mem{Base: op, Disp: 8 * i})
		VEXTRACTPS(Imm(1), acc[i].AsX(), Mem{Base: op, Disp: 8*i + 4})
	}
	VZEROUPPER()
	RET()
}

// genQ4Rows emits the sequential Q4_0 decode kernel: nrows consecutive rows (rs bytes apart),
// each read front to back, two blocks per 256-bit register ([block b nibbles | block b+1
// nibbles]). The token is pre-arranged per block pair (see q4Pairs in quant_act.go): x2 holds
// [x_b[0:16] x_b1[0:16] x_b[16:32] x_b1[16:32]], c2 the corrections [c_b 0 0 0 c_b1 0 0 0] and
// d2 the scales [dx_b x4, dx_b1 x4]. Lanes 0..3 accumulate block b, lanes 4..7 block b+1.
func genQ4Rows() {
	TEXT("q4_0Rows", NOSPLIT, "func(w *byte, rs int, nrows int, x2 *int8, d2 *float32, c2 *int32, npairs int, out *float32)")
	Doc("q4_0Rows computes nrows consecutive Q4_0 rows against one token in block-pair layout (see genQ4Rows).")
	Pragma("noescape")
	wrow := Load(Param("w"), GP64())
	rs := Load(Param("rs"), GP64())
	nr := Load(Param("nrows"), GP64())
	op := Load(Param("out"), GP64())
	ones := YMM()
	VMOVDQU(ones16, ones)
	TESTQ(nr, nr)
	JZ(LabelRef("q4r_done"))
	Label("q4r_row")
	wp := GP64()
	MOVQ(wrow, wp)
	xp := Load(Param("x2"), GP64())
	dp := Load(Param("d2"), GP64())
	cp := Load(Param("c2"), GP64())
	n := Load(Param("npairs"), GP64())
	acc := YMM()
	VXORPS(acc, acc, acc)
	TESTQ(n, n)
	JZ(LabelRef("q4r_end"))
	Label("q4r_loop")
	PREFETCHT0(Mem{Base: wp, Disp: prefetchAheadQ4})
	q, hi, p, p2 := YMM(), YMM(), YMM(), YMM()
	VMOVDQU(Mem{Base: wp, Disp: 2}, q.AsX())
	VINSERTI128(Imm(1), Mem{Base: wp, Disp: 20}, q, q)
	VPSRLW(Imm(4), q, hi)
	VPAND(mask0F, q, q)
	VPAND(mask0F, hi, hi)
	VPMADDUBSW(Mem{Base: xp}, q, p)
	VPMADDUBSW(Mem{Base: xp, Disp: 32}, hi, p2)
	VPADDW(p2, p, p)
	VPMADDWD(ones, p, p)
	VPADDD(Mem{Base: cp}, p, p)
	VCVTDQ2PS(p, p)
	s, s2 := XMM(), XMM()
	VPBROADCASTW(Mem{Base: wp}, s)
	VPBROADCASTW(Mem{Base: wp, Disp: 18}, s2)
	VPBLENDD(Imm(0xc), s2, s, s)
	VCVTPH2PS(s, s.AsY())
	VMULPS(Mem{Base: dp}, s.AsY(), s.AsY())
	VFMADD231PS(s.AsY(), p, acc)
	ADDQ(Imm(36), wp)
	ADDQ(Imm(64), xp)
	ADDQ(Imm(32), dp)
	ADDQ(Imm(32), cp)
	DECQ(n)
	JNZ(LabelRef("q4r_loop"))
	Label("q4r_end")
	t := YMM()
	hsum(acc, t)
	VMOVSS(acc.AsX(), Mem{Base: op})
	ADDQ(Imm(4), op)
	ADDQ(rs, wrow)
	DECQ(nr)
	JNZ(LabelRef("q4r_row"))
	Label("q4r_done")
	VZEROUPPER()
	RET()
}

// q8Block emits one Q8_0 block (weight at wm, token block at xm, token scale at dm) into acc.
func q8Block(wm, xm, dm Mem, ones, acc VecVirtual) {
	a, p, dw := YMM(), YMM(), YMM()
	VPABSB(wm.Offset(2), a)
	VMOVDQU(xm, p)
	VPSIGNB(wm.Offset(2), p, p)
	VPMADDUBSW(p, a, p)
	VPMADDWD(ones, p, p)
	VCVTDQ2PS(p, p)
	VPBROADCASTW(wm, dw.AsX())
	VCVTPH2PS(dw.AsX(), dw)
	VMULPS(dw, p, p)
	VBROADCASTSS(dm, dw)
	VFMADD231PS(dw, p, acc)
}

// genQ8Rows emits the sequential Q8_0 decode kernel: nrows consecutive rows (rs bytes apart),
// each read front to back, two blocks per iteration into two accumulators (same math and
// lane order per block as genTile; the two accumulators are added before the final sum).
func genQ8Rows() {
	TEXT("q8_0Rows", NOSPLIT, "func(w *byte, rs int, nrows int, xq *int8, xd *float32, nb int, out *float32)")
	Doc("q8_0Rows computes nrows consecutive Q8_0 rows against one token (see genQ8Rows).")
	Pragma("noescape")
	wrow := Load(Param("w"), GP64())
	rs := Load(Param("rs"), GP64())
	nr := Load(Param("nrows"), GP64())
	op := Load(Param("out"), GP64())
	ones := YMM()
	VMOVDQU(ones16, ones)
	TESTQ(nr, nr)
	JZ(LabelRef("q8r_done"))
	Label("q8r_row")
	wp := GP64()
	MOVQ(wrow, wp)
	xp := Load(Param("xq"), GP64())
	dp := Load(Param("xd"), GP64())
	n := Load(Param("nb"), GP64())
	acc0, acc1 := YMM(), YMM()
	VXORPS(acc0, acc0, acc0)
	VXORPS(acc1, acc1, acc1)
	CMPQ(n, Imm(2))
	JL(LabelRef("q8r_tail"))
	Label("q8r_loop")
	PREFETCHT0(Mem{Base: wp, Disp: prefetchAhead})
	q8Block(Mem{Base: wp}, Mem{Base: xp}, Mem{Base: dp}, ones, acc0)
	PREFETCHT0(Mem{Base: wp, Disp: prefetchAhead + 34})
	q8Block(Mem{Base: wp, Disp: 34}, Mem{Base: xp, Disp: 32}, Mem{Base: dp, Disp: 4}, ones, acc1)
	ADDQ(Imm(68), wp)
	ADDQ(Imm(64), xp)
	ADDQ(Imm(8), dp)
	SUBQ(Imm(2), n)
	CMPQ(n, Imm(2))
	JGE(LabelRef("q8r_loop"))
	Label("q8r_tail")
	TESTQ(n, n)
	JZ(LabelRef("q8r_end"))
	q8Block(Mem{Base: wp}, Mem{Base: xp}, Mem{Base: dp}, ones, acc0)
	Label("q8r_end")
	VADDPS(acc1, acc0, acc0)
	t := YMM()
	hsum(acc0, t)
	VMOVSS(acc0.AsX(), Mem{Base: op})
	ADDQ(Imm(4), op)
	ADDQ(rs, wrow)
	DECQ(nr)
	JNZ(LabelRef("q8r_row"))
	Label("q8r_done")
	VZEROUPPER()
	RET()
}
