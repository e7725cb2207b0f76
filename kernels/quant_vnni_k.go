// This file holds the Go side of the AVX-512 VNNI Q4_K and Q6_K GEMM kernels (genTileK4Z,
// genTileK6Z in internal/asmgen/quant): the per-token records they read, their plain-Go twins,
// and the prefill matmul that runs them (one weight row x up to 8 tokens per call).
package kernels

import "unsafe"

// kRec is the size of one token's record per Q8_K super-block: 256 int8 values at 0, the 16
// int16 sums of each 16 at kRecSum16 followed by 32 zero bytes (the Q6_K kernel reads 64),
// the 8 int16 sums of each 32 at kRecSum32, the float32 scale at kRecD, the 8 float32
// dx·bsum8 at kRecFB (read by the AVX2 tiles, quant_ktile.go), padding.
const (
	kRec      = 384
	kRecSum16 = 256
	kRecSum32 = 320
	kRecD     = 336
)

// tileKFunc computes one K-quant row x T tokens: out[t*ostride] for t < T.
type tileKFunc func(w *byte, xr *int8, xstride int, nb int, out *float32, ostride int)

// tilesKZ[q6][T] is the one-row x T-token Q4_K (q6 0) or Q6_K (1) VNNI kernel (T in 1..8).
var tilesKZ [2][9]tileKFunc

// Kinds of records in q8KActs.rec: values in natural order (VNNI kernels), or in the pair
// order of the AVX2 tiles (quant_ktile.go, pairOrderK).
const (
	recNatural = 1 + iota
	recPairs
)

// recs fills a.rec ([m][nb][kRec]) from the quantized tokens, values in natural order.
func (a *q8KActs) recs(p *Pool) { a.buildRecs(p, recNatural) }

// buildRecs fills a.rec with records of the given kind, in parallel over tokens.
func (a *q8KActs) buildRecs(p *Pool, kind uint8) {
	if a.recKind == kind {
		return
	}
	a.recKind = kind
	k, nb := a.k, a.nb
	a.rec = grow(a.rec, a.m*nb*kRec)
	p.For(a.m, 8, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			for b := 0; b < nb; b++ {
				r := a.rec[(t*nb+b)*kRec : (t*nb+b+1)*kRec]
				if kind == recPairs {
					pairOrderK(r[:256], a.qs[t*k+256*b:t*k+256*b+256])
				} else {
					copy(r[:256], a.qs[t*k+256*b:t*k+256*b+256])
				}
				*(*[16]int16)(unsafe.Pointer(&r[kRecSum16])) = [16]int16(a.bsums[(t*nb+b)*16:])
				clear(r[kRecSum16+32 : kRecSum32])
				*(*[8]int16)(unsafe.Pointer(&r[kRecSum32])) = [8]int16(a.bsum8[(t*nb+b)*8:])
				dx := a.d[t*nb+b]
				*(*float32)(unsafe.Pointer(&r[kRecD])) = dx
				fb := (*[8]float32)(unsafe.Pointer(&r[kRecFB]))
				for j, s := range a.bsum8[(t*nb+b)*8 : (t*nb+b)*8+8] {
					fb[j] = dx * float32(s)
				}
			}
		}
	})
}

// dotK4ZRef is the twin of one row x one token of q4KTileZ1xT: w is the Q4_K row, rec the
// token's records, over nb super-blocks; same integer lanes, same float32 order.
func dotK4ZRef(w []byte, rec []int8, nb int) float32 {
	var acc [16]float32
	for b := 0; b < nb; b++ {
		blk := w[144*b : 144*b+144]
		r := rec[kRec*b : kRec*b+kRec]
		sc, mn := scalesQ4K(blk[4:16])
		var sumi [16]int32
		for c := 0; c < 4; c++ {
			for l := 0; l < 16; l++ {
				var s int32
				for i := 0; i < 4; i++ {
					j := 4*l + i // element 64c+j
					nib := int32(blk[16+32*c+j%32] & 0xf)
					if j >= 32 {
						nib = int32(blk[16+32*c+j%32] >> 4)
					}
					s += nib * int32(r[64*c+j])
				}
				sumi[l] += sc[2*c+l/8] * s
			}
		}
		bs := *(*[8]int16)(unsafe.Pointer(&r[kRecSum32]))
		dx := *(*float32)(unsafe.Pointer(&r[kRecD]))
		s1, s2 := f16(blk)*dx, f16(blk[2:])*dx
		for l := range acc {
			acc[l] += float32(sumi[l]) * s1
		}
		for i := 0; i < 4; i++ {
			g := mn[2*i]*int32(bs[2*i]) + mn[2*i+1]*int32(bs[2*i+1])
			acc[i] -= float32(g) * s2
		}
	}
	return hsum16(&acc)
}

// dotK6ZRef is the twin of one row x one token of q6KTileZ1xT (w a Q6_K row, rec the token's
// records, nb super-blocks).
func dotK6ZRef(w []byte, rec []int8, nb int) float32 {
	var acc [16]float32
	for b := 0; b < nb; b++ {
		blk := w[210*b : 210*b+210]
		r := rec[kRec*b : kRec*b+kRec]
		var sumi [16]int32
		for c := 0; c < 4; c++ {
			for l := 0; l < 16; l++ {
				var s int32
				for i := 0; i < 4; i++ {
					e := 64*c + 4*l + i
					h, g, j := e/128, (e%128)/32, e%32
					ql := blk[64*h+32*(g%2)+j]
					if g >= 2 {
						ql >>= 4
					}
					q := int32(ql&0xf) | int32((blk[128+32*h+j]>>(2*g))&3)<<4
					s += q * int32(r[e])
				}
				sumi[l] += int32(int8(blk[192+4*c+l/4])) * s
			}
		}
		bs := *(*[16]int16)(unsafe.Pointer(&r[kRecSum16]))
		for l := 0; l < 8; l++ {
			sumi[l] -= 32 * (int32(int8(blk[192+2*l]))*int32(bs[2*l]) + int32(int8(blk[192+2*l+1]))*int32(bs[2*l+1]))
		}
		s1 := f16(blk[208:]) * *(*float32)(unsafe.Pointer(&r[kRecD]))
		for l := range acc {
			acc[l] += float32(sumi[l]) * s1
		}
	}
	return hsum16(&acc)
}

// refTileKZ returns the Go twin of q4KTileZ1xT (q6 false) or q6KTileZ1xT.
func refTileKZ(q6 bool, T int) tileKFunc {
	return func(w *byte, xr *int8, xstride int, nb int, out *float32, ostride int) {
		bb, dot := 144, dotK4ZRef
		if q6 {
			bb, dot = 210, dotK6ZRef
		}
		ws := unsafe.Slice(w, nb*bb)
		xs := unsafe.Slice(xr, (T-1)*xstride+nb*kRec)
		os := unsafe.Slice(out, (T-1)*ostride+1)
		for t := 0; t < T; t++ {
			os[t*ostride] = dot(ws, xs[t*xstride:], nb)
		}
	}
}

// matmulKZ runs a Q4_K or Q6_K (q6) prefill matmul (out [m, n] = x · wᵀ, a holding x
// quantized to Q8_K) on the VNNI kernels, 8 tokens per call; work items of 8 rows x one token
// chunk (whose records stay in L2), taken dynamically by the workers.
func matmulKZ(p *Pool, out []float32, a *q8KActs, w []byte, q6 bool, m, n, k int) {
	a.recs(p)
	nb := k / 256
	rs, xs := nb*144, nb*kRec
	if q6 {
		rs = nb * 210
	}
	tiles := &tilesKZ[btoi(q6)]
	tc := max(8, ((384<<10)/xs)&^7)
	const rowsPer = 8
	nrb := (n + rowsPer - 1) / rowsPer
	forDynamic(p, nrb*((m+tc-1)/tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		for r := r0; r < r1; r++ {
			for t := t0; t < t1; t += 8 {
				tiles[min(8, t1-t)](&w[r*rs], &a.rec[t*xs], xs, nb, &out[t*n+r], n)
			}
		}
	})
}
