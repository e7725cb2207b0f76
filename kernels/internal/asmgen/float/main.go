// Command float generates kernels/float_amd64.s and kernels/float_stubs_amd64.go: the AVX2+FMA
// (+F16C) kernels for float-weight matmuls (GEMV and a dot-product-style GEMM micro-kernel) and
// the element-wise fast paths. Run through `go generate ./kernels/` (see kernels/float.go).
//
// Conventions of every generated function: lengths are element counts that are multiples of 8
// (the Go wrappers handle tails), strides are in bytes, pointers are unaligned-safe.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// wtype describes how 8 weights are loaded into a YMM register as f32.
type wtype struct {
	name  string // F32, F16, BF16
	ctype string // Go pointer element type in the stub
	size  int    // bytes per element
}

var wtypes = []wtype{{"F32", "float32", 4}, {"F16", "uint16", 2}, {"BF16", "uint16", 2}}

// load8 loads 8 weights at m into y as f32.
func (t wtype) load8(m Mem, y VecVirtual) {
	switch t.name {
	case "F32":
		VMOVUPS(m, y)
	case "F16":
		VCVTPH2PS(m, y)
	case "BF16":
		VPMOVZXWD(m, y)
		VPSLLD(U8(16), y, y)
	}
}

func main() {
	expConsts()
	for _, t := range wtypes {
		gemv4(t)

		gemvRows(t)
	}
	for _, t := range wtypes {
		for mr := 1; mr <= 3; mr++ {
			for nr := 1; nr <= 4; nr++ {
				gemmKernel(t, mr, nr)
			}
		}
	}
	for _, t := range wtypes {
		for mr := 1; mr <= 4; mr++ {
			for nr := 1; nr <= 6; nr++ {
				zgemmKernel(t, mr, nr)
			}
		}
	}
	for rows := 1; rows <= 6; rows++ {
		attnPVZ(rows)
	}
	for _, w := range wtypes {
		attnQKRows(64, w)
		attnQKRows(128, w)
		for nb := 1; nb <= 6; nb++ {
			attnPVRows(nb, w)
		}
	}
	cvt("F16", 0)
	cvt("BF16", 0)
	roundF16()
	dot()
	axpy()
	scale()
	sumSq()
	mulScale()
	add()
	maxf()
	expSub()
	swiglu()
	Generate()
}

// hsum4 reduces four YMM accumulators to one XMM [s(a0), s(a1), s(a2), s(a3)].
func hsum4(a [4]VecVirtual) VecVirtual {
	VHADDPS(a[1], a[0], a[0])
	VHADDPS(a[3], a[2], a[2])
	VHADDPS(a[2], a[0], a[0])
	hi := XMM()
	VEXTRACTF128(U8(1), a[0], hi)
	VADDPS(hi, a[0].AsX(), hi)
	return hi
}

// hsum1 reduces one YMM accumulator to the low lane of an XMM.
func hsum1(a VecVirtual) VecVirtual {
	hi := XMM()
	VEXTRACTF128(U8(1), a, hi)
	VADDPS(hi, a.AsX(), hi)
	VHADDPS(hi, hi, hi)
	VHADDPS(hi, hi, hi)
	return hi
}

// gemv4Prefetch is how far ahead (bytes) of each row gemvF32x4, gemvF16x4 and gemvBF16x4
// prefetch (PREFETCHNTA, once per 32 bytes of F16/BF16 rows, 64 of F32 rows). The decode reads
// each worker's share as four streams, a row of each per call, so the prefetch runs into the
// stream's next row near the end of one. Measured on the Zen 5 VM (two threads, 512 MiB of
// 5632x2048 matrices from DRAM (F32: 2816x2048), each variant's GB/s over a plain read of the
// same memory in the same turn, split by the host's two bandwidth modes, above and below 65
// GB/s; 5 Dec 2026): F16 (ten runs, three of them mostly above): NTA 2048 ahead read 9-10%
// more than no prefetch above and 2-3% more below; PREFETCHT0 2048 gained 12-14% above but
// 0-1% below; NTA 1024 gained 3-5% below and lost 4% above. BF16 (nine runs, all below): NTA
// 2048 +5-9%. F32 (nine runs, one with turns above): +0-4% below, +9.5% above.
const gemv4Prefetch = 2048

// gemv4 computes out[0..3] = dot(w row r, x) for four weight rows at stride ldw bytes.
func gemv4(t wtype) {
	TEXT("gemv"+t.name+"x4", NOSPLIT, fmt.Sprintf("func(w *%s, ldw int, x *float32, k int, out *float32)", t.ctype))
	Doc(fmt.Sprintf("gemv%sx4 sets out[r] = Σ_i w[r*ldw/%d+i]*x[i] for r < 4; k is a multiple of 8.", t.name, t.size))
	Pragma("noescape")
	p0 := Load(Param("w"), GP64())
	ld := Load(Param("ldw"), GP64())
	x := Load(Param("x"), GP64())
	k := Load(Param("k"), GP64())
	p1 := GP64()
	LEAQ(Mem{Base: p0, Index: ld, Scale: 1}, p1)
	rows := func(off int) [4]Mem {
		return [4]Mem{
			{Base: p0, Disp: off},
			{Base: p0, Index: ld, Scale: 1, Disp: off},
			{Base: p0, Index: ld, Scale: 2, Disp: off},
			{Base: p1, Index: ld, Scale: 2, Disp: off},
		}
	}
	var acc [2][4]VecVirtual
	for u := 0; u < 2; u++ {
		for r := 0; r < 4; r++ {
			acc[u][r] = YMM()
			VXORPS(acc[u][r], acc[u][r], acc[u][r])
		}
	}
	xv := [2]VecVirtual{YMM(), YMM()}
	wv := [2]VecVirtual{YMM(), YMM()}
	Label("loop16")
	CMPQ(k, U8(16))
	JL(LabelRef("tail8"))
	for u := 0; u < 2; u++ {
		VMOVUPS(Mem{Base: x, Disp: 32 * u}, xv[u])
	}
	for r := 0; r < 4; r++ {
		for u := 0; u < 2; u++ {
			t.load8(rows(8 * t.size * u)[r], wv[u])
			VFMADD231PS(xv[u], wv[u], acc[u][r])
		}
		PREFETCHNTA(rows(gemv4Prefetch)[r])
	}
	ADDQ(U8(64), x)
	ADDQ(U8(16*t.size), p0)
	ADDQ(U8(16*t.size), p1)
	SUBQ(U8(16), k)
	JMP(LabelRef("loop16"))
	Label("tail8")
	CMPQ(k, U8(8))
	JL(LabelRef("reduce"))
	VMOVUPS(Mem{Base: x}, xv[0])
	for r := 0; r < 4; r++ {
		t.load8(rows(0)[r], wv[0])
		VFMADD231PS(xv[0], wv[0], acc[0][r])
	}
	Label("reduce")
	for r := 0; r < 4; r++ {
		VADDPS(acc[1][r], acc[0][r], acc[0][r])
	}
	s := hsum4(acc[0])
	o := Load(Param("out"), GP64())
	VMOVUPS(s, Mem{Base: o})
	VZEROUPPER()
	RET()
}

// gemvRows computes out[r] = dot(w row r, x) for r < rows, reading the rows one after another.
func gemvRows(t wtype) {
	TEXT("gemv"+t.name+"rows", NOSPLIT, fmt.Sprintf("func(w *%s, ldw int, x *float32, k int, out *float32, rows int)", t.ctype))
	Doc(fmt.Sprintf("gemv%srows sets out[r] = Σ_i w[r*ldw/%d+i]*x[i] for r < rows, one row after another; k is a multiple of 8.", t.name, t.size))
	Pragma("noescape")
	row := Load(Param("w"), GP64())
	ld := Load(Param("ldw"), GP64())
	o := Load(Param("out"), GP64())
	rows := Load(Param("rows"), GP64())
	w, x, k := GP64(), GP64(), GP64()
	var acc [4]VecVirtual
	for u := range acc {
		acc[u] = YMM()
	}
	wv := [4]VecVirtual{YMM(), YMM(), YMM(), YMM()}
	Label("row")
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	MOVQ(row, w)
	Load(Param("x"), x)
	Load(Param("k"), k)
	for u := range acc {
		VXORPS(acc[u], acc[u], acc[u])
	}
	Label("loop32")
	CMPQ(k, U8(32))
	JL(LabelRef("tail8"))
	for u := 0; u < 4; u++ {
		t.load8(Mem{Base: w, Disp: 8 * t.size * u}, wv[u])
		VFMADD231PS(Mem{Base: x, Disp: 32 * u}, wv[u], acc[u])
	}
	ADDQ(U8(128), x)
	ADDQ(U8(32*t.size), w)
	SUBQ(U8(32), k)
	JMP(LabelRef("loop32"))
	Label("tail8")
	CMPQ(k, U8(8))
	JL(LabelRef("reduce"))
	t.load8(Mem{Base: w}, wv[0])
	VFMADD231PS(Mem{Base: x}, wv[0], acc[0])
	ADDQ(U8(32), x)
	ADDQ(U8(8*t.size), w)
	SUBQ(U8(8), k)
	JMP(LabelRef("tail8"))
	Label("reduce")
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	s := hsum1(acc[0])
	VMOVSS(s, Mem{Base: o})
	ADDQ(U8(4), o)
	ADDQ(ld, row)
	DECQ(rows)
	JMP(LabelRef("row"))
	Label("done")
	VZEROUPPER()
	RET()
}

// gemmKernel: C[i][j] (+)= Σ_l A[i][l]*B[j][l] for i < mr, j < nr; A rows (f32) at stride lda
// bytes, B rows (weights of type t, converted on the fly) at ldb bytes, C rows at ldc bytes; k
// multiple of 8; accumulate when acc != 0.
func gemmKernel(t wtype, mr, nr int) {
	acc, cmem, flag := gemmKernelStart(t, mr, nr, false)
	sums := make([]VecVirtual, mr)
	// Every tile reduces through hsum4 (missing accumulators are zero), so an output's sum has
	// the same order whatever nr is and wherever it sits in the tile.
	var zero VecVirtual
	if nr < 4 {
		zero = YMM()
		VXORPS(zero, zero, zero)
	}
	for i := 0; i < mr; i++ {
		four := [4]VecVirtual{zero, zero, zero, zero}
		copy(four[:], acc[i])
		if nr <= 2 {
			// hsum4 writes its third input: give this row a zero register of its own.
			four[2] = YMM()
			VXORPS(four[2], four[2], four[2])
		}
		sums[i] = hsum4(four)
	}
	TESTQ(flag, flag)
	JZ(LabelRef("store"))
	for i := 0; i < mr; i++ {
		if nr == 4 {
			VADDPS(cmem(i, 0), sums[i], sums[i])
			continue
		}
		t := XMM()
		VMOVSS(cmem(i, 0), t)
		for j := 1; j < nr; j++ {
			VINSERTPS(U8(j<<4), cmem(i, 4*j), t, t)
		}
		VADDPS(t, sums[i], sums[i])
	}
	Label("store")
	for i := 0; i < mr; i++ {
		if nr == 4 {
			VMOVUPS(sums[i], cmem(i, 0))
			continue
		}
		VMOVSS(sums[i], cmem(i, 0))
		for j := 1; j < nr; j++ {
			VEXTRACTPS(U8(j), sums[i], cmem(i, 4*j))
		}
	}
	VZEROUPPER()
	RET()
}
