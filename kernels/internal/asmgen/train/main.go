// Command train generates kernels/gemm_train_amd64.s and kernels/gemm_train_stubs_amd64.go:
// the AVX2+FMA micro-kernel of kernels.Gemm (a 6x16 tile of C from packed panels, the
// broadcast-A / vector-B outer-product form) and the FMA loop PeakFLOPS times. Run through
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

// microKernel: C[r][j] (+)= Σ_p a[p*6+r]·b[p*16+j] for r < 6, j < 16, p < k, summing p in
// order (one FMA per p into each accumulator lane).
func microKernel() {
	name := fmt.Sprintf("gemmTrain%dx%d", mr, nr)
	TEXT(name, NOSPLIT, "func(k int, a, b, c *float32, ldc int, acc int)")
	Doc(fmt.Sprintf("%s sets (or, with acc != 0, adds to) C[r*ldc/4+j] Σ_p a[p*%d+r]·b[p*%d+j] for r < %d, j < %d, p < k (packed panels; ldc in bytes).",
		name, mr, nr, mr, nr))
	k := Load(Param("k"), GP64())
	pa := Load(Param("a"), GP64())
	pb := Load(Param("b"), GP64())
	var accs [mr][2]VecVirtual
	for r := range accs {
		for j := range accs[r] {
			accs[r][j] = YMM()
			VXORPS(accs[r][j], accs[r][j], accs[r][j])
		}
	}
	b0, b1, t := YMM(), YMM(), YMM()
	step := func(u int) {
		VMOVUPS(Mem{Base: pb, Disp: 4 * nr * u}, b0)
		VMOVUPS(Mem{Base: pb, Disp: 4*nr*u + 32}, b1)
		for r := 0; r < mr; r++ {
			VBROADCASTSS(Mem{Base: pa, Disp: 4 * (mr*u + r)}, t)
			VFMADD231PS(b0, t, accs[r][0])
			VFMADD231PS(b1, t, accs[r][1])
		}
	}
	const unroll = 4
	Label("loop4")
	CMPQ(k, U8(unroll))
	JL(LabelRef("tail"))
	for u := 0; u < unroll; u++ {
		step(u)
	}
	ADDQ(U32(4*mr*unroll), pa)
	ADDQ(U32(4*nr*unroll), pb)
	SUBQ(U8(unroll), k)
	JMP(LabelRef("loop4"))
	Label("tail")
	TESTQ(k, k)
	JZ(LabelRef("store"))
	step(0)
	ADDQ(U8(4*mr), pa)
	ADDQ(U8(4*nr), pb)
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
