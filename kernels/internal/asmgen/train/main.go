// Command train generates kernels/gemm_train_amd64.s and kernels/gemm_train_stubs_amd64.go:
// the AVX2+FMA micro-kernel of kernels.Gemm (a 6x16 tile of C, the broadcast-A / vector-B
// outer-product form, reading packed panels or matrices in place through strides) and the FMA loop PeakFLOPS times. Run through
// `go generate ./kernels/` (see kernels/gemm_train_fast.go).
//
// Conventions: lengths are element counts, strides are in bytes, loads and stores are
// unaligned-safe.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// vec is a vector width: AVX2 (YMM, 8 lanes) or AVX-512 (ZMM, 16 lanes).
type vec struct {
	name  string
	lanes int
	reg   func() VecVirtual
}

var (
	ymm = vec{"", 8, YMM}
	zmm = vec{"512", 16, ZMM}
)

func main() {
	// C tiles of mr rows x 2 vectors: 6x16 with 12 YMM accumulators (of 16 registers), 8x32
	// with 16 ZMM accumulators (of 32; enough to cover the FMA latency on two pipes).
	microKernel(6, ymm)
	microKernel(8, zmm)
	fmaPeak(ymm)
	fmaPeak(zmm)
	for _, w := range []int{8, 16, 32} {
		copyRows(w)
	}
	transpose8()
	Generate()
}

// microKernel: C[r][j] (+)= Σ_p A(r,p)·B(p,j) for r < 6, j < 16, p < k, summing p in order (one
// FMA per p into each accumulator lane). A(r,p) is at a + r*ars + p*aps and B(p, 0..15) at
// b + p*bps (bytes), so the same kernel reads packed panels (ars=4, aps=24, bps=64) or a
// matrix in place (row-major or transposed).
func microKernel(mr int, v vec) {
	nr := 2 * v.lanes
	name := fmt.Sprintf("gemmTrain%dx%d", mr, nr)
	TEXT(name, NOSPLIT, "func(k int, a *float32, ars, aps int, b *float32, bps int, c *float32, ldc int, acc int)")
	Doc(fmt.Sprintf("%s sets (or, with acc != 0, adds to) C[r*ldc/4+j] Σ_p A(r,p)·B(p,j) for r < %d, j < %d, p < k, where A(r,p) = *(a + r*ars + p*aps) and B(p,j) = *(b + p*bps + 4j); strides in bytes.",
		name, mr, nr))
	k := Load(Param("k"), GP64())
	a0 := Load(Param("a"), GP64())
	ars := Load(Param("ars"), GP64())
	aps := Load(Param("aps"), GP64())
	pb := Load(Param("b"), GP64())
	bps := Load(Param("bps"), GP64())
	bases := []Register{a0} // bases[q] = a + 3q*ars
	for q := 1; 3*q < mr; q++ {
		bq := GP64()
		LEAQ(Mem{Base: bases[q-1], Index: ars, Scale: 2}, bq)
		ADDQ(ars, bq)
		bases = append(bases, bq)
	}
	amem := func(r int) Mem {
		base := bases[r/3]
		r %= 3
		switch r {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: ars, Scale: 1}
		}
		return Mem{Base: base, Index: ars, Scale: 2}
	}
	// Prefetch the C tile now: its loads at the end would otherwise wait on cache misses when
	// C does not fit in L2 (C is re-read once per k block).
	pc := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	pf := GP64()
	MOVQ(pc, pf)
	for r := 0; r < mr; r++ {
		for off := 0; off < 4*nr; off += 64 {
			PREFETCHT0(Mem{Base: pf, Disp: off})
		}
		if r < mr-1 {
			ADDQ(ldc, pf)
		}
	}
	vb := 4 * v.lanes // bytes per vector
	accs := make([][2]VecVirtual, mr)
	for r := range accs {
		for j := range accs[r] {
			accs[r][j] = v.reg()
			VXORPS(accs[r][j], accs[r][j], accs[r][j])
		}
	}
	b0, b1, t := v.reg(), v.reg(), v.reg()
	step := func() {
		VMOVUPS(Mem{Base: pb}, b0)
		VMOVUPS(Mem{Base: pb, Disp: vb}, b1)
		for r := 0; r < mr; r++ {
			VBROADCASTSS(amem(r), t)
			VFMADD231PS(b0, t, accs[r][0])
			VFMADD231PS(b1, t, accs[r][1])
		}
		for _, b := range bases {
			ADDQ(aps, b)
		}
		ADDQ(bps, pb)
	}
	const unroll = 4
	Label("loop4")
	CMPQ(k, U8(unroll))
	JL(LabelRef("tail"))
	for u := 0; u < unroll; u++ {
		step()
	}
	SUBQ(U8(unroll), k)
	JMP(LabelRef("loop4"))
	Label("tail")
	TESTQ(k, k)
	JZ(LabelRef("store"))
	step()
	DECQ(k)
	JMP(LabelRef("tail"))

	Label("store")
	flag := Load(Param("acc"), GP64())
	TESTQ(flag, flag)
	JZ(LabelRef("set"))
	for r := 0; r < mr; r++ {
		VADDPS(Mem{Base: pc}, accs[r][0], accs[r][0])
		VADDPS(Mem{Base: pc, Disp: vb}, accs[r][1], accs[r][1])
		VMOVUPS(accs[r][0], Mem{Base: pc})
		VMOVUPS(accs[r][1], Mem{Base: pc, Disp: vb})
		ADDQ(ldc, pc)
	}
	VZEROUPPER()
	RET()
	Label("set")
	for r := 0; r < mr; r++ {
		VMOVUPS(accs[r][0], Mem{Base: pc})
		VMOVUPS(accs[r][1], Mem{Base: pc, Disp: vb})
		ADDQ(ldc, pc)
	}
	VZEROUPPER()
	RET()
}

// fmaPeak runs n iterations of 12 independent FMAs on full vectors (12*lanes*2 flops per
// iteration): enough chains to cover the FMA latency on two pipes, no memory traffic.
func fmaPeak(v vec) {
	name := "fmaPeak" + v.name
	TEXT(name, NOSPLIT, "func(n int) float32")
	Doc(fmt.Sprintf("%s runs n iterations of 12 independent %d-lane FMAs (%d flops each) and returns a lane of the result so the work is observable.",
		name, v.lanes, 12*v.lanes*2))
	n := Load(Param("n"), GP64())
	var accs [12]VecVirtual
	for i := range accs {
		accs[i] = v.reg()
		VXORPS(accs[i], accs[i], accs[i])
	}
	x, y := v.reg(), v.reg()
	VXORPS(x, x, x)
	VXORPS(y, y, y)
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	for i := range accs {
		VFMADD231PS(x, y, accs[i])
	}
	DECQ(n)
	JMP(LabelRef("loop"))
	Label("done")
	for i := 1; i < len(accs); i++ {
		VADDPS(accs[i], accs[0], accs[0])
	}
	Store(accs[0].AsX(), ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// copyRows packs rows of w floats: dst[p*w + j] = src[p*sstride/4 + j] for p < rows, j < w,
// with YMM moves (the panel packing of Gemm for a row-major B or a transposed A).
func copyRows(w int) {
	name := fmt.Sprintf("copyRows%d", w)
	TEXT(name, NOSPLIT, "func(dst, src *float32, sstride, rows int)")
	Doc(fmt.Sprintf("%s sets dst[p*%d+j] = src[p*sstride/4+j] for p < rows, j < %d (sstride in bytes).", name, w, w))
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	ss := Load(Param("sstride"), GP64())
	n := Load(Param("rows"), GP64())
	vs := make([]VecVirtual, w/8)
	for i := range vs {
		vs[i] = YMM()
	}
	Label("loop")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	for i, v := range vs {
		VMOVUPS(Mem{Base: src, Disp: 32 * i}, v)
	}
	for i, v := range vs {
		VMOVUPS(v, Mem{Base: dst, Disp: 32 * i})
	}
	ADDQ(ss, src)
	ADDQ(U32(4*w), dst)
	DECQ(n)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}

// transpose8 packs 8 rows transposed: dst[p*dstride/4 + i] = src[i*sstride/4 + p] for i < 8,
// p < k (k a multiple of 8), one 8x8 block at a time in registers (unpack, shuffle, permute
// 128-bit halves). It is the panel packing of Gemm for a transposed B (the forward X·Wᵀ).
func transpose8() {
	TEXT("transpose8", NOSPLIT, "func(dst, src *float32, sstride, dstride, k int)")
	Doc("transpose8 sets dst[p*dstride/4+i] = src[i*sstride/4+p] for i < 8, p < k (k a multiple of 8; strides in bytes).")
	dst := Load(Param("dst"), GP64())
	s0 := Load(Param("src"), GP64())
	ss := Load(Param("sstride"), GP64())
	ds := Load(Param("dstride"), GP64())
	k := Load(Param("k"), GP64())
	s3, s6 := GP64(), GP64()
	LEAQ(Mem{Base: s0, Index: ss, Scale: 2}, s3)
	ADDQ(ss, s3)
	LEAQ(Mem{Base: s3, Index: ss, Scale: 2}, s6)
	ADDQ(ss, s6)
	row := func(i int) Mem {
		base := []Register{s0, s3, s6}[i/3]
		switch i % 3 {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: ss, Scale: 1}
		}
		return Mem{Base: base, Index: ss, Scale: 2}
	}
	Label("loop")
	CMPQ(k, U8(8))
	JL(LabelRef("done"))
	var r, t, u [8]VecVirtual
	for i := range r {
		r[i] = YMM()
		VMOVUPS(row(i), r[i])
	}
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = YMM(), YMM()
		VUNPCKLPS(r[i+1], r[i], t[i])
		VUNPCKHPS(r[i+1], r[i], t[i+1])
	}
	for g := 0; g < 8; g += 4 { // t[g..g+3] -> u[g..g+3]
		for j := 0; j < 4; j++ {
			u[g+j] = YMM()
		}
		VSHUFPS(U8(0x44), t[g+2], t[g], u[g])
		VSHUFPS(U8(0xEE), t[g+2], t[g], u[g+1])
		VSHUFPS(U8(0x44), t[g+3], t[g+1], u[g+2])
		VSHUFPS(U8(0xEE), t[g+3], t[g+1], u[g+3])
	}
	out := GP64()
	MOVQ(dst, out)
	for q := 0; q < 8; q++ {
		o := YMM()
		imm := U8(0x20)
		if q >= 4 {
			imm = U8(0x31)
		}
		VPERM2F128(imm, u[4+q%4], u[q%4], o)
		VMOVUPS(o, Mem{Base: out})
		ADDQ(ds, out)
	}
	MOVQ(out, dst)
	ADDQ(U8(32), s0)
	ADDQ(U8(32), s3)
	ADDQ(U8(32), s6)
	SUBQ(U8(8), k)
	JMP(LabelRef("loop"))
	Label("done")
	VZEROUPPER()
	RET()
}
