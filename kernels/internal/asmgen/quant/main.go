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

// strided returns the address of item i (0..3) of a strided sequence: base + i·s, with s3 = 3·s
// (x86 addressing scales by 1, 2, 4 or 8 only).
func strided(base, s, s3 Register, i int) Mem {
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

func main() {
	flag.IntVar(&prefetchAhead, "prefetch", prefetchAhead, "Q8_0 decode prefetch distance in bytes (0: none)")
	flag.IntVar(&prefetchAheadQ4, "prefetch-q4", prefetchAheadQ4, "Q4_0 decode prefetch distance in bytes (0: none)")
	flag.IntVar(&prefetchNext, "prefetch-next", prefetchNext, "q8_0Rows4Z: 1 prefetch the next rows into L1, -1 into L2, 0 none")
	flag.IntVar(&prefetch4P, "prefetch-4p", prefetch4P, "q8_0Rows4P: prefetch distance in bytes ahead of each stream (0: none)")
	flag.StringVar(&prefetch4PInstr, "prefetch-4p-instr", prefetch4PInstr, "q8_0Rows4P: PREFETCHT0, PREFETCHT1 or PREFETCHNTA")
	flag.IntVar(&prefetchGroups, "prefetch-groups", prefetchGroups, "q8_0Rows4Z: how many row groups ahead to prefetch")
	flag.Parse()
	consts()
	constsZ()
	constsK4Z()
	constsK6Z()
	constsKA()
	genQuantQ8_0()
	genQuantQ8K()
	for _, rt := range [][2]int{{8, 1}, {4, 1}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {1, 1}, {1, 2}, {1, 3}, {1, 4}} {
		genTile(false, rt[0], rt[1])
		if rt[0] < 4 { // Q4_0 decode uses genQ4Pairs
			genTile(true, rt[0], rt[1])
		}
	}
	genQ4Pairs(2)
	genQ4Pairs(4)
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
	genRowsZ(false)
	genRowsZ(true)
	for t := 1; t <= 8; t++ {
		genTileI16(t)
	}
	genRows4Z(4)
	genRows4Z(1)
	genRows4P()
	genQ4Rows4P()
	genRows4T2(false)
	genRows4T2(true)
	for _, t := range []int{1, 2, 3, 4} {
		genRows2T(false, t)
		genRows2T(true, t)
	}
	genRows8P(false)
	genRows8P(true)
	genRows4PZ()
	genRows4A(false)
	genRows4A(true)
	for t := 1; t <= 8; t++ {
		genTileK4Z(t)
	}
	for t := 1; t <= 8; t++ {
		genTileK6Z(t)
	}
	for t := 1; t <= 8; t++ {
		genTileK4A(t)
		genTileK6A(t)
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
	wrow := func(r int) Mem {
		if r >= 4 {
			return strided(wp4, ws, ws3, r-4)
		}
		return strided(wp, ws, ws3, r)
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
			VBROADCASTSS(strided(dp, ds, ds3, t), s)
		}
		xm := strided(xp, xs, xs3, t)
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
				VPADDD(strided(cp, xs, xs3, t), p, p)
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
