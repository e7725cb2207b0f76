// This file generates the AVX2 Q8_K activation quantizer (the values and block scales; the
// block sums are added in Go, kernels/quant_kact.go).
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genQuantQ8K emits quantQ8KAVX2: per block of 256 floats, max = the value of largest
// magnitude (the first one on ties), iscale = -127/max, q = round-half-even(iscale·x) (within
// ±127, so the saturating packs change nothing), d = 1/iscale; q = 0 and d = 0 for a zero block.
// The same float32 operations as quantRowQ8KRef, so the results are bit-identical.
func genQuantQ8K() {
	TEXT("quantQ8KAVX2", NOSPLIT, "func(x *float32, qs *int8, d *float32, nb int)")
	Doc("quantQ8KAVX2 quantizes nb blocks of 256 floats at x to Q8_K values qs and scales d (see genQuantQ8K).")
	Pragma("noescape")
	fm127 := GLOBL("q_fm127", RODATA|NOPTR)
	DATA(0, U32(0xc2fe0000)) // float32 -127
	fone := GLOBL("q_fone", RODATA|NOPTR)
	DATA(0, U32(0x3f800000)) // float32 1
	xp := Load(Param("x"), GP64())
	qp := Load(Param("qs"), GP64())
	dp := Load(Param("d"), GP64())
	n := Load(Param("nb"), GP64())
	TESTQ(n, n)
	JZ(LabelRef("q8k_done"))
	am := YMM()
	VBROADCASTSS(absMask, am)
	Label("q8k_loop")
	acc := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for j := range acc {
		VANDPS(Mem{Base: xp, Disp: 32 * j}, am, acc[j])
	}
	b := YMM()
	for i := 1; i < 8; i++ {
		for j := range acc {
			VANDPS(Mem{Base: xp, Disp: 128*i + 32*j}, am, b)
			VMAXPS(b, acc[j], acc[j])
		}
	}
	a := acc[0]
	VMAXPS(acc[1], a, a)
	VMAXPS(acc[3], acc[2], acc[2])
	VMAXPS(acc[2], a, a)
	VEXTRACTF128(Imm(1), a, b.AsX())
	VMAXPS(b.AsX(), a.AsX(), a.AsX())
	VMOVHLPS(a.AsX(), a.AsX(), b.AsX())
	VMAXPS(b.AsX(), a.AsX(), a.AsX())
	VMOVSHDUP(a.AsX(), b.AsX())
	VMAXSS(b.AsX(), a.AsX(), a.AsX()) // a[0] = amax
	bits := GP32()
	VMOVD(a.AsX(), bits)
	TESTL(bits, bits)
	JZ(LabelRef("q8k_zero"))
	amv := YMM()
	VBROADCASTSS(a.AsX(), amv)
	// the first element with |x| == amax
	p, m := GP64(), GP32()
	MOVQ(xp, p)
	Label("q8k_find")
	VANDPS(Mem{Base: p}, am, b)
	VCMPPS(Imm(0), amv, b, b)
	VMOVMSKPS(b, m)
	TESTL(m, m)
	JNZ(LabelRef("q8k_found"))
	ADDQ(Imm(32), p)
	JMP(LabelRef("q8k_find"))
	Label("q8k_found")
	BSFL(m, m)
	mx, is, t := XMM(), XMM(), XMM()
	VMOVSS(Mem{Base: p, Index: m.As64(), Scale: 4}, mx)
	VMOVSS(fm127, t)
	VDIVSS(mx, t, is) // -127/max
	VMOVSS(fone, t)
	VDIVSS(is, t, t) // 1/iscale
	VMOVSS(t, Mem{Base: dp})
	isv := YMM()
	VBROADCASTSS(is, isv)
	perm := YMM()
	VMOVDQU(permQ8, perm)
	for g := 0; g < 8; g++ {
		v := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
		for i := range v {
			VMULPS(Mem{Base: xp, Disp: 128*g + 32*i}, isv, v[i])
			VCVTPS2DQ(v[i], v[i])
		}
		VPACKSSDW(v[1], v[0], v[0])
		VPACKSSDW(v[3], v[2], v[2])
		VPACKSSWB(v[2], v[0], v[0])
		VPERMD(v[0], perm, v[0])
		VMOVDQU(v[0], Mem{Base: qp, Disp: 32 * g})
	}
	JMP(LabelRef("q8k_next"))
	Label("q8k_zero")
	VXORPS(b, b, b)
	for g := 0; g < 8; g++ {
		VMOVDQU(b, Mem{Base: qp, Disp: 32 * g})
	}
	VMOVSS(b.AsX(), Mem{Base: dp})
	Label("q8k_next")
	ADDQ(U32(1024), xp)
	ADDQ(U32(256), qp)
	ADDQ(Imm(4), dp)
	DECQ(n)
	JNZ(LabelRef("q8k_loop"))
	Label("q8k_done")
	VZEROUPPER()
	RET()
}
