// This file generates the position-major decode attention kernels (AVX-512): for one page
// segment of keys and a worker's query heads, attnQKRowsZ_{hd} computes every head's score of
// key row i before it moves to row i+1, and attnPVRowsZ_{nb} adds every head's weighted value
// row i before row i+1, so that a worker reads the K and V rows of a decode row's context in
// address order. Each score is gemmZF32's chain (one 16-lane accumulator, FMAs over the head
// dimension in order, zsum4's lane tree, then the scale) and each output element attnPVZ's
// chain of FMAs over the keys in order, so results are bit for bit those of the tile kernels.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// attnQKRows generates attnQKRowsZ_{hd}: for key rows i < nk (ldk bytes apart from k) and
// output rows u < 4*n4, s[u*lds/4 + i] = scale * (q_u · k_i[koff[u]/4 :]) with q_u the hd values
// at q + u*hd*4.
//
// With w F16 or BF16 the keys are a pool of that type, converted in registers (VCVTPH2PS, or
// widened and shifted): the sums are those over the pool's f32 values, bit for bit.
func attnQKRows(hd int, w wtype) {
	name := fmt.Sprintf("attnQKRowsZ%s_%d", typeSuffix(w), hd)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(q *float32, k *%s, ldk int, koff *int, n4 int, s *float32, lds int, nk int, scale float32)", w.ctype))
	Doc(fmt.Sprintf("%s sets s[u*lds/4+i] = scale * Σ_c q[u*%d+c] * k_i[c] for u < 4*n4, i < nk, c < %d, key i's values (%s) at byte i*ldk+koff[u] of k, each sum as gemmZF32 forms it; strides and offsets in bytes. AVX-512F.", name, hd, hd, w.name))
	kp := Load(Param("k"), GP64())
	ldk := Load(Param("ldk"), GP64())
	sp := Load(Param("s"), GP64())
	lds := Load(Param("lds"), GP64())
	nk := Load(Param("nk"), GP64())
	sc := ZMM()
	VBROADCASTSS(Load(Param("scale"), XMM()), sc)
	g, qg, tab, sg := GP64(), GP64(), GP64(), GP64()
	var kr [4]GPVirtual
	for u := range kr {
		kr[u] = GP64()
	}
	Label("key")
	TESTQ(nk, nk)
	JZ(LabelRef("done"))
	Load(Param("n4"), g)
	Load(Param("q"), qg)
	Load(Param("koff"), tab)
	MOVQ(sp, sg)
	Label("group")
	var acc [4]VecVirtual
	for u := range kr {
		MOVQ(Mem{Base: tab, Disp: 8 * u}, kr[u])
		ADDQ(kp, kr[u])
		acc[u] = ZMM()
		VXORPS(acc[u], acc[u], acc[u])
	}
	for c := 0; c < hd/16; c++ {
		for u := range kr {
			kv := ZMM()
			w.load16(Mem{Base: kr[u], Disp: 16 * w.size * c}, kv)
			VFMADD231PS(Mem{Base: qg, Disp: 4*hd*u + 64*c}, kv, acc[u])
		}
	}
	x := zsum4(acc)
	VMULPS(sc.AsX(), x, x)
	s2 := kr[0]
	LEAQ(Mem{Base: sg, Index: lds, Scale: 2}, s2)
	VMOVSS(x, Mem{Base: sg})
	VEXTRACTPS(U8(1), x, Mem{Base: sg, Index: lds, Scale: 1})
	VEXTRACTPS(U8(2), x, Mem{Base: s2})
	VEXTRACTPS(U8(3), x, Mem{Base: s2, Index: lds, Scale: 1})
	LEAQ(Mem{Base: sg, Index: lds, Scale: 4}, sg)
	ADDQ(U8(32), tab)
	ADDQ(U32(16*hd), qg)
	DECQ(g)
	JNZ(LabelRef("group"))
	ADDQ(ldk, kp)
	ADDQ(U8(4), sp)
	DECQ(nk)
	JMP(LabelRef("key"))
	Label("done")
	VZEROUPPER()
	RET()
}

// attnPVRows generates attnPVRowsZ_{nb}: for nb <= 6 blocks of 64 output columns (block b at
// out + ooff[b], its weights at p + poff[b], its values at v + voff[b] in every row),
// out_b[c] += Σ_i p_b[i] * v_i[c] over key rows i < nk (ldv bytes apart), keys in order.
// With w F16 or BF16 the values are a pool of that type, converted in registers.
func attnPVRows(nb int, w wtype) {
	name := fmt.Sprintf("attnPVRowsZ%s_%d", typeSuffix(w), nb)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(out *float32, ooff *int, p *float32, poff *int, v *%s, ldv int, voff *int, nk int)", w.ctype))
	Doc(fmt.Sprintf("%s sets out[(ooff[b]/4)+c] += Σ_i p[(poff[b]+4*i)/4] * v_i[c] for b < %d, c < 64, i < nk, value row i's block b (%s) at byte i*ldv+voff[b] of v (keys in order, row by row); offsets and strides in bytes. AVX-512F.", name, nb, w.name))
	o := Load(Param("out"), GP64())
	otab := Load(Param("ooff"), GP64())
	t := GP64()
	acc := make([][4]VecVirtual, nb)
	for b := range acc {
		MOVQ(Mem{Base: otab, Disp: 8 * b}, t)
		for c := range acc[b] {
			acc[b][c] = ZMM()
			VMOVUPS(Mem{Base: o, Index: t, Scale: 1, Disp: 64 * c}, acc[b][c])
		}
	}
	pp := Load(Param("p"), GP64())
	ptab := Load(Param("poff"), GP64())
	vp := Load(Param("v"), GP64())
	ldv := Load(Param("ldv"), GP64())
	vtab := Load(Param("voff"), GP64())
	nk := Load(Param("nk"), GP64())
	t2 := GP64()
	var vv [4]VecVirtual
	for c := range vv {
		vv[c] = ZMM()
	}
	bc := ZMM()
	Label("key")
	TESTQ(nk, nk)
	JZ(LabelRef("done"))
	for b := 0; b < nb; b++ {
		MOVQ(Mem{Base: vtab, Disp: 8 * b}, t)
		MOVQ(Mem{Base: ptab, Disp: 8 * b}, t2)
		for c := range vv {
			w.load16(Mem{Base: vp, Index: t, Scale: 1, Disp: 16 * w.size * c}, vv[c])
		}
		VBROADCASTSS(Mem{Base: pp, Index: t2, Scale: 1}, bc)
		for c := range vv {
			VFMADD231PS(vv[c], bc, acc[b][c])
		}
	}
	ADDQ(U8(4), pp)
	ADDQ(ldv, vp)
	DECQ(nk)
	JMP(LabelRef("key"))
	Label("done")
	o2 := Load(Param("out"), GP64())
	otab2 := Load(Param("ooff"), GP64())
	for b := range acc {
		MOVQ(Mem{Base: otab2, Disp: 8 * b}, t)
		for c := range acc[b] {
			VMOVUPS(acc[b][c], Mem{Base: o2, Index: t, Scale: 1, Disp: 64 * c})
		}
	}
	VZEROUPPER()
	RET()
}

// typeSuffix names the pool type in a kernel's name: none for F32 (the first kernels' names).
func typeSuffix(w wtype) string {
	if w.name == "F32" {
		return ""
	}
	return w.name
}
