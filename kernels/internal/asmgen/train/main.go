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

const (
	mr = 6  // rows of the C tile (broadcast A values per k step)
	nr = 16 // columns of the C tile (two YMM vectors of B per k step)
)

func main() {
	microKernel()
	fmaPeak()
	Generate()
}

// microKernel: C[r][j] (+)= Σ_p A(r,p)·B(p,j) for r < 6, j < 16, p < k, summing p in order (one
// FMA per p into each accumulator lane). A(r,p) is at a + r*ars + p*aps and B(p, 0..15) at
// b + p*bps (bytes), so the same kernel reads packed panels (ars=4, aps=24, bps=64) or a
// matrix in place (row-major or transposed).
func microKernel() {
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
	a3 := GP64()
	LEAQ(Mem{Base: a0, Index: ars, Scale: 2}, a3)
	ADDQ(ars, a3) // a3 = a + 3*ars
	amem := func(r int) Mem {
		base := a0
		if r >= 3 {
			base, r = a3, r-3
		}
		switch r {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: ars, Scale: 1}
		}
		return Mem{Base: base, Index: ars, Scale: 2}
	}
	var accs [mr][2]VecVirtual
	for r := range accs {
		for j := range accs[r] {
			accs[r][j] = YMM()
			VXORPS(accs[r][j], accs[r][j], accs[r][j])
		}
	}
	b0, b1, t := YMM(), YMM(), YMM()
	step := func() {
		VMOVUPS(Mem{Base: pb}, b0)
		VMOVUPS(Mem{Base: pb, Disp: 32}, b1)
		for r := 0; r < mr; r++ {
			VBROADCASTSS(amem(r), t)
			VFMADD231PS(b0, t, accs[r][0])
			VFMADD231PS(b1, t, accs[r][1])
		}
		ADDQ(aps, a0)
		ADDQ(aps, a3)
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
	pc := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	flag := Load(Param("acc"), GP64())
	TESTQ(flag, flag)
	JZ(LabelRef("set"))
	for r := 0; r < mr; r++ {
		VADDPS(Mem{Base: pc}, accs[r][0], accs[r][0])
		VADDPS(Mem{Base: pc, Disp: 32}, accs[r][1], accs[r][1])
		VMOVUPS(accs[r][0], Mem{Base: pc})
		VMOVUPS(accs[r][1], Mem{Base: pc, Disp: 32})
		ADDQ(ldc, pc)
	}
	VZEROUPPER()
	RET()
	Label("set")
	for r := 0; r < mr; r++ {
		VMOVUPS(accs[r][0], Mem{Base: pc})
		VMOVUPS(accs[r][1], Mem{Base: pc, Disp: 32})
		ADDQ(ldc, pc)
	}
	VZEROUPPER()
	RET()
}

// fmaPeak runs n iterations of 12 independent 8-lane FMAs (192 flops per iteration): enough
// chains to cover the FMA latency on two pipes, no memory traffic.
func fmaPeak() {
	TEXT("fmaPeak", NOSPLIT, "func(n int) float32")
	Doc("fmaPeak runs n iterations of 12 independent 8-lane FMAs (192 flops each) and returns a lane of the result so the work is observable.")
	n := Load(Param("n"), GP64())
	var accs [12]VecVirtual
	for i := range accs {
		accs[i] = YMM()
		VXORPS(accs[i], accs[i], accs[i])
	}
	x, y := YMM(), YMM()
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
