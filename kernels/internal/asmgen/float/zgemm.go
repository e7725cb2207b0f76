// This file generates the AVX-512 GEMM micro-kernels gemmZ{F32,F16,BF16}_{mr}x{nr} (mr <= 4
// activation rows x nr <= 6 weight rows): the AVX2 kernels' dot-product shape on 16-lane ZMM registers
// (24 accumulators + 4 activation registers + 1 weight register of the 32), reduced with
// EVEX-encodable shuffles (VHADDPS has no EVEX form) and stored through a lane mask.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// zsum4 reduces four ZMM accumulators to one XMM [s(a0), s(a1), s(a2), s(a3)]; a nil entry
// counts as zero. The accumulators are clobbered.
func zsum4(a [4]VecVirtual) VecVirtual {
	for j := range a {
		if a[j] == nil {
			a[j] = ZMM()
			VXORPS(a[j], a[j], a[j])
		}
	}
	// Per 128-bit lane: t0 = [a0_0+a0_2, a1_0+a1_2, a0_1+a0_3, a1_1+a1_3], t1 likewise for a2, a3.
	pair := func(x, y VecVirtual) VecVirtual {
		lo, hi := ZMM(), ZMM()
		VUNPCKLPS(y, x, lo)
		VUNPCKHPS(y, x, hi)
		VADDPS(hi, lo, lo)
		return lo
	}
	t0, t1 := pair(a[0], a[1]), pair(a[2], a[3])
	lo, hi := ZMM(), ZMM()
	VUNPCKLPD(t1, t0, lo)
	VUNPCKHPD(t1, t0, hi)
	VADDPS(hi, lo, lo) // per lane: [a0, a1, a2, a3] partial sums
	y := YMM()
	VEXTRACTF64X4(U8(1), lo, y)
	VADDPS(lo.AsY(), y, y)
	x := XMM()
	VEXTRACTF32X4(U8(1), y, x)
	VADDPS(y.AsX(), x, x)
	return x
}

// gemmKernelStart emits a micro-kernel's TEXT, its loop (gemmLoop) and the "reduce" label, and
// returns the accumulators, the address of C row i plus off bytes, and the acc argument.
func gemmKernelStart(t wtype, mr, nr int, wide bool) (acc [][]VecVirtual, cmem func(i, off int) Mem, flag Register) {
	name, lanes, isa := fmt.Sprintf("gemm%s_%dx%d", t.name, mr, nr), 8, ""
	if wide {
		name, lanes, isa = fmt.Sprintf("gemmZ%s_%dx%d", t.name, mr, nr), 16, " AVX-512F."
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(a *float32, lda int, b *%s, ldb int, k int, c *float32, ldc int, acc int)", t.ctype))
	Doc(fmt.Sprintf("%s sets (or, with acc != 0, adds to) C[i*ldc/4+j] the dot product of A row i and B row j over k (multiple of %d) for i < %d, j < %d; strides in bytes.%s", name, lanes, mr, nr, isa))
	acc = gemmLoop(t, mr, nr, wide)
	Label("reduce")
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	c2 := GP64()
	LEAQ(Mem{Base: c, Index: ldc, Scale: 2}, c2)
	cmem = func(i, off int) Mem {
		return [...]Mem{
			{Base: c, Disp: off}, {Base: c, Index: ldc, Scale: 1, Disp: off},
			{Base: c2, Disp: off}, {Base: c2, Index: ldc, Scale: 1, Disp: off},
		}[i]
	}
	return acc, cmem, Load(Param("acc"), GP64())
}

// gemmLoop emits the loads of a GEMM micro-kernel's a, lda, b, ldb, k and its main loop over
// k (two vectors of lanes per iteration, then one): mr <= 4 A rows x nr <= 6 B rows of
// accumulators, YMM (8 lanes) or, with wide set, ZMM (16 lanes). It returns the accumulators
// and leaves the code at the point where the caller's label "reduce" must follow.
func gemmLoop(t wtype, mr, nr int, wide bool) [][]VecVirtual {
	vec, bytes := YMM, 32
	if wide {
		vec, bytes = ZMM, 64
	}
	pa := Load(Param("a"), GP64())
	lda := Load(Param("lda"), GP64())
	pb := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	k := Load(Param("k"), GP64())
	pa2, pb3 := GP64(), GP64()
	LEAQ(Mem{Base: pa, Index: lda, Scale: 2}, pa2)
	LEAQ(Mem{Base: pb, Index: ldb, Scale: 2}, pb3)
	ADDQ(ldb, pb3)
	amem := func(i, off int) Mem {
		return [...]Mem{
			{Base: pa, Disp: off}, {Base: pa, Index: lda, Scale: 1, Disp: off},
			{Base: pa2, Disp: off}, {Base: pa2, Index: lda, Scale: 1, Disp: off},
		}[i]
	}
	bmem := func(j, off int) Mem {
		return [...]Mem{
			{Base: pb, Disp: off}, {Base: pb, Index: ldb, Scale: 1, Disp: off}, {Base: pb, Index: ldb, Scale: 2, Disp: off},
			{Base: pb3, Disp: off}, {Base: pb3, Index: ldb, Scale: 1, Disp: off}, {Base: pb3, Index: ldb, Scale: 2, Disp: off},
		}[j]
	}
	acc := make([][]VecVirtual, mr)
	for i := range acc {
		acc[i] = make([]VecVirtual, nr)
		for j := range acc[i] {
			acc[i][j] = vec()
			VXORPS(acc[i][j], acc[i][j], acc[i][j])
		}
	}
	av := make([]VecVirtual, mr)
	for i := range av {
		av[i] = vec()
	}
	bv := vec()
	step := func(off int) {
		for i := 0; i < mr; i++ {
			VMOVUPS(amem(i, off), av[i])
		}
		for j := 0; j < nr; j++ {
			if mr == 1 && t.name == "F32" {
				VFMADD231PS(bmem(j, off), av[0], acc[0][j])
				continue
			}
			if wide {
				t.load16(bmem(j, off*t.size/4), bv)
			} else {
				t.load8(bmem(j, off*t.size/4), bv)
			}
			for i := 0; i < mr; i++ {
				VFMADD231PS(av[i], bv, acc[i][j])
			}
		}
	}
	lanes := bytes / 4
	Label("loop2")
	CMPQ(k, U8(2*lanes))
	JL(LabelRef("tail1"))
	step(0)
	step(bytes)
	ADDQ(U8(2*bytes), pa)
	ADDQ(U8(2*bytes), pa2)
	ADDQ(U8(2*lanes*t.size), pb)
	ADDQ(U8(2*lanes*t.size), pb3)
	SUBQ(U8(2*lanes), k)
	JMP(LabelRef("loop2"))
	Label("tail1")
	CMPQ(k, U8(lanes))
	JL(LabelRef("reduce"))
	step(0)
	return acc
}

// load16 loads 16 weights at m into z as f32.
func (t wtype) load16(m Mem, z VecVirtual) {
	switch t.name {
	case "F32":
		VMOVUPS(m, z)
	case "F16":
		VCVTPH2PS(m, z)
	case "BF16":
		VPMOVZXWD(m, z)
		VPSLLD(U8(16), z, z)
	}
}

// zgemmKernel generates gemmZ{T}_{mr}x{nr}: C[i, j] (=, or += with acc != 0) the dot product of
// f32 A row i and B row j (type T, converted in registers) over k (a multiple of 16) for
// i < mr, j < nr; strides in bytes. Each output's sum has the same order whatever mr, nr and
// its place in the tile (16 lanes over k, then zsum4's fixed lane tree).
func zgemmKernel(t wtype, mr, nr int) {
	acc, cmem, flag := gemmKernelStart(t, mr, nr, true)
	// Groups of four outputs per row; a partial group is loaded and stored through mask K1.
	if nr%4 != 0 {
		m := GP32()
		MOVL(U32(1<<(nr%4)-1), m)
		KMOVW(m, K1)
	}
	for i := 0; i < mr; i++ {
		for g := 0; g < nr; g += 4 {
			var four [4]VecVirtual
			copy(four[:], acc[i][g:min(g+4, nr)])
			s := zsum4(four)
			full := g+4 <= nr
			done := fmt.Sprintf("stored%d_%d", i, g)
			add := fmt.Sprintf("add%d_%d", i, g)
			TESTQ(flag, flag)
			JNZ(LabelRef(add))
			if full {
				VMOVUPS(s, cmem(i, 4*g))
			} else {
				VMOVUPS(s, K1, cmem(i, 4*g))
			}
			JMP(LabelRef(done))
			Label(add)
			t := XMM()
			if full {
				VADDPS(cmem(i, 4*g), s, s)
				VMOVUPS(s, cmem(i, 4*g))
			} else {
				VMOVUPS_Z(cmem(i, 4*g), K1, t)
				VADDPS(t, s, s)
				VMOVUPS(s, K1, cmem(i, 4*g))
			}
			Label(done)
		}
	}
	VZEROUPPER()
	RET()
}

// attnPVZ generates attnPVZ_{rows}: for rows <= 6 output rows of 64 columns,
// out[r][0:64] += Σ_i p[r][i] * v[i][0:64] for i < nb, keys in order (each output element is
// the same chain of FMAs as the one-row AVX2 attnPV, so results are bit-identical to it).
// The 4 x rows ZMM accumulators stay in registers across all nb value rows.
func attnPVZ(rows int) {
	name := fmt.Sprintf("attnPVZ_%d", rows)
	TEXT(name, NOSPLIT, "func(out *float32, ldo int, p *float32, ldp int, v *float32, ldv int, nb int)")
	Doc(fmt.Sprintf("%s sets out[r*ldo/4+c] += Σ_i p[r*ldp/4+i] * v[i*ldv/4+c] for r < %d, c < 64, i < nb (keys in order); strides in bytes. AVX-512F.", name, rows))
	o := Load(Param("out"), GP64())
	ldo := Load(Param("ldo"), GP64())
	pp := Load(Param("p"), GP64())
	ldp := Load(Param("ldp"), GP64())
	vp := Load(Param("v"), GP64())
	ldv := Load(Param("ldv"), GP64())
	nb := Load(Param("nb"), GP64())
	o3, p3 := GP64(), GP64()
	LEAQ(Mem{Base: o, Index: ldo, Scale: 2}, o3)
	ADDQ(ldo, o3)
	LEAQ(Mem{Base: pp, Index: ldp, Scale: 2}, p3)
	ADDQ(ldp, p3)
	rowMem := func(b, b3, ld Register, r, off int) Mem {
		return [...]Mem{
			{Base: b, Disp: off}, {Base: b, Index: ld, Scale: 1, Disp: off}, {Base: b, Index: ld, Scale: 2, Disp: off},
			{Base: b3, Disp: off}, {Base: b3, Index: ld, Scale: 1, Disp: off}, {Base: b3, Index: ld, Scale: 2, Disp: off},
		}[r]
	}
	acc := make([][4]VecVirtual, rows)
	for r := range acc {
		for c := range acc[r] {
			acc[r][c] = ZMM()
			VMOVUPS(rowMem(o, o3, ldo, r, 64*c), acc[r][c])
		}
	}
	var vv [4]VecVirtual
	for c := range vv {
		vv[c] = ZMM()
	}
	bc := ZMM()
	Label("key")
	TESTQ(nb, nb)
	JZ(LabelRef("done"))
	for c := range vv {
		VMOVUPS(Mem{Base: vp, Disp: 64 * c}, vv[c])
	}
	for r := 0; r < rows; r++ {
		VBROADCASTSS(rowMem(pp, p3, ldp, r, 0), bc)
		for c := range vv {
			VFMADD231PS(vv[c], bc, acc[r][c])
		}
	}
	ADDQ(U8(4), pp)
	ADDQ(U8(4), p3)
	ADDQ(ldv, vp)
	DECQ(nb)
	JMP(LabelRef("key"))
	Label("done")
	for r := range acc {
		for c := range acc[r] {
			VMOVUPS(acc[r][c], rowMem(o, o3, ldo, r, 64*c))
		}
	}
	VZEROUPPER()
	RET()
}
