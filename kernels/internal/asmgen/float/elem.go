package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vecConst defines a 32-byte read-only vector holding v in all eight lanes.
func vecConst(name string, v float32) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 8; i++ {
		DATA(4*i, U32(math.Float32bits(v)))
	}
	return m
}

var expC struct {
	hi, lo, log2e, ln2hi, ln2lo Mem
	c                           [7]Mem
}

func expConsts() {
	expC.hi = vecConst("expHi", 88.3)
	expC.lo = vecConst("expLo", -87.3)
	expC.log2e = vecConst("expLog2e", float32(math.Log2E))
	// ln2 split so that n*ln2hi is exact for |n| <= 256.
	expC.ln2hi = vecConst("expLn2hi", 0.693145751953125)
	expC.ln2lo = vecConst("expLn2lo", 1.428606765330187e-06)
	// Taylor coefficients 1/i! for e^r, |r| <= ln2/2.
	f := 1.0
	for i := 0; i <= 6; i++ {
		if i > 0 {
			f *= float64(i)
		}
		expC.c[i] = vecConst("expC"+string(rune('0'+i)), float32(1/f))
	}
}

// exp8 replaces v by exp(v) lane-wise (inputs below -87.3 give 0; above 88.3 give exp(88.3)).
func exp8(v VecVirtual) {
	mask, n, r, p := YMM(), YMM(), YMM(), YMM()
	VCMPPS(U8(13), expC.lo, v, mask) // v >= lo
	VMINPS(expC.hi, v, v)
	VMAXPS(expC.lo, v, v)
	VMULPS(expC.log2e, v, n)
	VROUNDPS(U8(0), n, n)
	VMOVAPS(v, r)
	VFNMADD231PS(expC.ln2hi, n, r)
	VFNMADD231PS(expC.ln2lo, n, r)
	VMOVUPS(expC.c[6], p)
	for i := 5; i >= 0; i-- {
		VFMADD213PS(expC.c[i], r, p)
	}
	VCVTPS2DQ(n, n)
	VPSLLD(U8(23), n, n)
	VPADDD(n, p, p)
	VANDPS(mask, p, v)
}

func ptrs(names ...string) []GPVirtual {
	var r []GPVirtual
	for _, n := range names {
		r = append(r, Load(Param(n), GP64()).(GPVirtual))
	}
	return r
}

// loop8 emits a loop over n (multiple of 8) elements, calling body with the byte offset base
// registers already advanced; adv lists the pointers to advance by 32 bytes per step.
func loop8(n Register, adv []GPVirtual, body func()) {
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	body()
	for _, p := range adv {
		ADDQ(U8(32), p)
	}
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
}

// cvt converts F16/BF16 to f32, 32 values per iteration; with pf > 0 it prefetches the source
// pf bytes ahead (the GEMM packer uses the next k block of the same weight row).
func cvt(name string, pf int) {
	fn := "cvt" + name
	if pf > 0 {
		fn += "PF"
	}
	TEXT(fn, NOSPLIT, "func(dst *float32, src *uint16, n int)")
	Doc(fn + " converts n (multiple of 8) " + name + " values to f32.")
	p := ptrs("dst", "src")
	n := Load(Param("n"), GP64())
	var y [4]VecVirtual
	for i := range y {
		y[i] = YMM()
	}
	t := wtype{name: name}
	Label("loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("loop"))
	if pf > 0 {
		PREFETCHT0(Mem{Base: p[1], Disp: pf})
	}
	for i := 0; i < 4; i++ {
		t.load8(Mem{Base: p[1], Disp: 16 * i}, y[i])
	}
	for i := 0; i < 4; i++ {
		VMOVUPS(y[i], Mem{Base: p[0], Disp: 32 * i})
	}
	ADDQ(U8(128), p[0])
	ADDQ(U8(64), p[1])
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	Label("loop")
	CMPQ(n, U8(8))
	JL(LabelRef("done"))
	t.load8(Mem{Base: p[1]}, y[0])
	VMOVUPS(y[0], Mem{Base: p[0]})
	ADDQ(U8(32), p[0])
	ADDQ(U8(16), p[1])
	SUBQ(U8(8), n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

func roundF16() {
	TEXT("roundF16", NOSPLIT, "func(dst, src *float32, n int)")
	Doc("roundF16 sets dst = f32(f16(src)) (round to nearest even) for n (multiple of 8) values.")
	p := ptrs("dst", "src")
	n := Load(Param("n"), GP64())
	y := YMM()
	loop8(n, p, func() {
		VMOVUPS(Mem{Base: p[1]}, y)
		VCVTPS2PH(U8(0), y, y.AsX())
		VCVTPH2PS(y.AsX(), y)
		VMOVUPS(y, Mem{Base: p[0]})
	})
	VZEROUPPER()
	RET()
}

func dot() {
	TEXT("dotF32", NOSPLIT, "func(a, b *float32, n int) float32")
	Doc("dotF32 returns Σ a[i]*b[i] over n (multiple of 8) values.")
	p := ptrs("a", "b")
	n := Load(Param("n"), GP64())
	var acc [4]VecVirtual
	for i := range acc {
		acc[i] = YMM()
		VXORPS(acc[i], acc[i], acc[i])
	}
	t := YMM()
	Label("loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("loop"))
	for i := 0; i < 4; i++ {
		VMOVUPS(Mem{Base: p[0], Disp: 32 * i}, t)
		VFMADD231PS(Mem{Base: p[1], Disp: 32 * i}, t, acc[i])
	}
	ADDQ(U8(128), p[0])
	ADDQ(U8(128), p[1])
	SUBQ(U8(32), n)
	JMP(LabelRef("loop32"))
	loop8(n, p, func() {
		VMOVUPS(Mem{Base: p[0]}, t)
		VFMADD231PS(Mem{Base: p[1]}, t, acc[0])
	})
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	Store(hsum1(acc[0]), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func axpy() {
	TEXT("axpyF32", NOSPLIT, "func(y *float32, a float32, x *float32, n int)")
	Doc("axpyF32 sets y[i] += a*x[i] for n (multiple of 8) values.")
	p := ptrs("y", "x")
	a := Load(Param("a"), XMM())
	n := Load(Param("n"), GP64())
	av, t := YMM(), YMM()
	VBROADCASTSS(a, av)
	loop8(n, p, func() {
		VMOVUPS(Mem{Base: p[0]}, t)
		VFMADD231PS(Mem{Base: p[1]}, av, t)
		VMOVUPS(t, Mem{Base: p[0]})
	})
	VZEROUPPER()
	RET()
}

func scale() {
	TEXT("scaleF32", NOSPLIT, "func(x *float32, a float32, n int)")
	Doc("scaleF32 sets x[i] *= a for n (multiple of 8) values.")
	p := ptrs("x")
	a := Load(Param("a"), XMM())
	n := Load(Param("n"), GP64())
	av, t := YMM(), YMM()
	VBROADCASTSS(a, av)
	loop8(n, p, func() {
		VMULPS(Mem{Base: p[0]}, av, t)
		VMOVUPS(t, Mem{Base: p[0]})
	})
	VZEROUPPER()
	RET()
}

func sumSq() {
	TEXT("sumSqF64", NOSPLIT, "func(x *float32, n int) float64")
	Doc("sumSqF64 returns Σ float64(x[i]*x[i]) (squares in f32, sums in f64) over n (multiple of 8) values.")
	p := ptrs("x")
	n := Load(Param("n"), GP64())
	a0, a1, t, lo, hi := YMM(), YMM(), YMM(), YMM(), YMM()
	VXORPD(a0, a0, a0)
	VXORPD(a1, a1, a1)
	loop8(n, p, func() {
		VMOVUPS(Mem{Base: p[0]}, t)
		VMULPS(t, t, t)
		VCVTPS2PD(t.AsX(), lo)
		VEXTRACTF128(U8(1), t, hi.AsX())
		VCVTPS2PD(hi.AsX(), hi)
		VADDPD(lo, a0, a0)
		VADDPD(hi, a1, a1)
	})
	VADDPD(a1, a0, a0)
	x := XMM()
	VEXTRACTF128(U8(1), a0, x)
	VADDPD(x, a0.AsX(), x)
	VHADDPD(x, x, x)
	Store(x, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func mulScale() {
	TEXT("mulScaleF32", NOSPLIT, "func(out, x, w *float32, s float32, n int)")
	Doc("mulScaleF32 sets out[i] = x[i]*s*w[i] for n (multiple of 8) values.")
	p := ptrs("out", "x", "w")
	s := Load(Param("s"), XMM())
	n := Load(Param("n"), GP64())
	sv, t := YMM(), YMM()
	VBROADCASTSS(s, sv)
	loop8(n, p, func() {
		VMULPS(Mem{Base: p[1]}, sv, t)
		VMULPS(Mem{Base: p[2]}, t, t)
		VMOVUPS(t, Mem{Base: p[0]})
	})
	VZEROUPPER()
	RET()
}

func add() {
	TEXT("addF32", NOSPLIT, "func(dst, src *float32, n int)")
	Doc("addF32 sets dst[i] += src[i] for n (multiple of 8) values.")
	p := ptrs("dst", "src")
	n := Load(Param("n"), GP64())
	t := YMM()
	loop8(n, p, func() {
		VMOVUPS(Mem{Base: p[0]}, t)
		VADDPS(Mem{Base: p[1]}, t, t)
		VMOVUPS(t, Mem{Base: p[0]})
	})
	VZEROUPPER()
	RET()
}

func maxf() {
	TEXT("maxF32", NOSPLIT, "func(x *float32, n int) float32")
	Doc("maxF32 returns the largest of n (multiple of 8, >= 8) values.")
	p := ptrs("x")
	n := Load(Param("n"), GP64())
	m := YMM()
	VMOVUPS(Mem{Base: p[0]}, m)
	loop8(n, p, func() {
		VMAXPS(Mem{Base: p[0]}, m, m)
	})
	x := XMM()
	VEXTRACTF128(U8(1), m, x)
	VMAXPS(x, m.AsX(), x)
	y := XMM()
	VPERMILPS(U8(0x4e), x, y)
	VMAXPS(y, x, x)
	VPERMILPS(U8(0xb1), x, y)
	VMAXPS(y, x, x)
	Store(x, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func expSub() {
	TEXT("expSubF32", NOSPLIT, "func(x *float32, mx float32, n int) float32")
	Doc("expSubF32 sets x[i] = exp(x[i]-mx) (AVX2 polynomial) for n (multiple of 8) values and returns their sum.")
	p := ptrs("x")
	mxs := Load(Param("mx"), XMM())
	n := Load(Param("n"), GP64())
	mv, v, s := YMM(), YMM(), YMM()
	VBROADCASTSS(mxs, mv)
	VXORPS(s, s, s)
	loop8(n, p, func() {
		VMOVUPS(Mem{Base: p[0]}, v)
		VSUBPS(mv, v, v)
		exp8(v)
		VMOVUPS(v, Mem{Base: p[0]})
		VADDPS(v, s, s)
	})
	Store(hsum1(s), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

func swiglu() {
	TEXT("swigluF32", NOSPLIT, "func(out, a, b *float32, n int)")
	Doc("swigluF32 sets out[i] = a[i]/(1+exp(-a[i]))*b[i] for n (multiple of 8) values.")
	p := ptrs("out", "a", "b")
	n := Load(Param("n"), GP64())
	a, v, zero := YMM(), YMM(), YMM()
	VXORPS(zero, zero, zero)
	loop8(n, p, func() {
		VMOVUPS(Mem{Base: p[1]}, a)
		VSUBPS(a, zero, v)
		exp8(v)
		VADDPS(expC.c[0], v, v)
		VDIVPS(v, a, v)
		VMULPS(Mem{Base: p[2]}, v, v)
		VMOVUPS(v, Mem{Base: p[0]})
	})
	VZEROUPPER()
	RET()
}
