// This file holds the Q4_0 prefill GEMM over cross-interleaved block quads for CPUs without
// AVX-512 VNNI: the tiles q4_0TileX1xT (quant_quads4x_amd64.s) regroup a row's quad of blocks
// b..b+3 so that each of the four nibble registers holds 8 values of every block in the same
// byte positions; the four VPMADDUBSW results of a token then add in int16 and one VPMADDWD
// leaves lanes 2j, 2j+1 of block b+j, where the quad tiles of quant_quads.go need two
// VPMADDWD and a VPHADDD (three micro-ops on Zen 3): 12 micro-ops per row, token and quad
// instead of 14. Tokens in the matching order (q8Acts.xq) with one 64-byte record per quad
// (q8Acts.sx: 8 lane scales, 8 lane corrections). Every T sums a row and token in the same
// order (batch invariance; MatMulInvariant runs the 1x1 tile for m = 1). The plain-Go twin is
// refTileX4.
package kernels

import (
	"math"
	"unsafe"
)

// tilesX4[T] are the cross-interleaved Q4_0 quad tiles, one row x T = 1..8 tokens (nil where
// no assembly is installed). Arguments as tileFunc, with xs the token in quad order (q8Acts.xq,
// xstride = k), xd its records (q8Acts.sx, k/2 bytes per token), corr unused and np counting
// block quads.
var tilesX4 [9]tileFunc

// x4Toks is the most tokens per tile call in matmulQ4X; 0 turns these tiles off (the quad
// tiles of quant_quads.go run instead).
var x4Toks = 8

// useX4 reports whether matmulQ8Acts runs the cross-interleaved Q4_0 tiles for k/32 = nb.
func useX4(nb int) bool { return x4Toks > 0 && tilesX4[1] != nil && nb%4 == 0 }

// matmulQ4X runs out = x · wᵀ for Q4_0 weights ([n, k], k/32 a multiple of 4): work items of 16
// rows x one token chunk (which stays in L2), taken dynamically by the workers; inside, groups
// of up to x4Toks tokens (kept in L1) against the item's rows one by one.
func matmulQ4X(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) {
	items, fn := x4Items(p, out, a, w, m, n, k)
	runItems(p, m, items, fn)
}

// x4Items prepares a's quad layout and returns matmulQ4X's work items: their number and the
// function computing item c.
func x4Items(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) (int, func(c int)) {
	a.prepX4(p)
	nb := k / 32
	rs, nq, tc := nb*18, nb/4, tokenChunkZ(k)
	const rowsPer = 16
	T := x4Toks
	nrb := (n + rowsPer - 1) / rowsPer
	return nrb * ((m + tc - 1) / tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		// The chunk's tokens in ng groups of nearly equal size (at most T each).
		ng := (t1 - t0 + T - 1) / T
		for g, t := 0, t0; g < ng; g++ {
			tt := (t1 - t) / (ng - g)
			f := tilesX4[tt]
			for r := r0; r < r1; r++ {
				f(&w[r*rs], rs, &a.xq[t*k], k, (*float32)(unsafe.Pointer(&a.sx[t*k/8])), nil, nq, &out[t*n+r], n)
			}
			t += tt
		}
	}
}

// x4Elem is the element (0..31) of its block of byte i (0..7) of block slot j in register g
// (0..3) of the quad order: registers are the low and high nibbles of bytes 0..7 and of bytes
// 8..15 of each block.
func x4Elem(g, i int) int { return 8*(g>>1) + 16*(g&1) + i }

// dotX4Ref is the twin of one row and one token of q4_0TileX1xT over nq block quads: lane l
// sums the products of bytes 4(l%2)..4(l%2)+3 of block slot l/2 over the four registers, plus
// the record's correction; then acc = fma(float(lane)·dw, dx, acc), l+4 onto l and
// (x0+x1)+(x2+x3).
func dotX4Ref(w []byte, xs []int8, sx []int32, nq int) float32 {
	var acc [8]float32
	for q := 0; q < nq; q++ {
		rec := sx[16*q : 16*q+16]
		for l := range acc {
			blk := l >> 1
			lane := rec[8+l]
			for g := 0; g < 4; g++ {
				for i := 4 * (l & 1); i < 4*(l&1)+4; i++ {
					e := x4Elem(g, i)
					by := w[72*q+18*blk+2+(e&15)]
					nib := int32(by & 15)
					if e >= 16 {
						nib = int32(by >> 4)
					}
					lane += nib * int32(xs[128*q+32*g+8*blk+i])
				}
			}
			dw := f16(w[72*q+18*blk:])
			acc[l] = fma32(float32(lane)*dw, math.Float32frombits(uint32(rec[l])), acc[l])
		}
	}
	x0, x1, x2, x3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (x0 + x1) + (x2 + x3)
}

// refTileX4 returns the Go twin of the cross-interleaved Q4_0 tile for one row x T tokens.
func refTileX4(T int) tileFunc {
	return func(w *byte, _ int, xs *int8, xstride int, xd *float32, _ *int32, nq int, out *float32, ostride int) {
		ws := unsafe.Slice(w, nq*72)
		n := (T-1)*xstride + nq*128
		xv := unsafe.Slice(xs, n)
		dv := unsafe.Slice((*int32)(unsafe.Pointer(xd)), n/8)
		os := unsafe.Slice(out, (T-1)*ostride+1)
		for t := 0; t < T; t++ {
			o := t * xstride
			os[t*ostride] = dotX4Ref(ws, xv[o:], dv[o/8:], nq)
		}
	}
}

// prepX4 computes the quad order xq and the records sx of all of a's tokens (quantized with
// the Q4_0 corrections; nb a multiple of 4): per quad, byte 32g+8j+i of xq is element
// x4Elem(g, i) of block b+j, and the record holds the lane scales [dx_b, dx_b, dx_b1, dx_b1,
// dx_b2, dx_b2, dx_b3, dx_b3] (float32 bits), then the corrections [c_b, 0, c_b1, 0, c_b2, 0,
// c_b3, 0]. In parallel over tokens on p.
func (a *q8Acts) prepX4(p *Pool) {
	if a.ready&readyX4 != 0 {
		return
	}
	a.ready |= readyX4
	a.xq = grow(a.xq, a.m*a.k)
	a.sx = grow(a.sx, a.m*a.k/8)
	k, nb := a.k, a.nb
	p.For(a.m, 8, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			qs, d, c := a.qs[t*k:(t+1)*k], a.d[t*nb:(t+1)*nb], a.corr[t*nb*8:(t+1)*nb*8]
			for q := 0; q < nb/4; q++ {
				src, dst := qs[128*q:128*q+128], a.xq[t*k+128*q:t*k+128*q+128]
				for g := 0; g < 4; g++ {
					for j := 0; j < 4; j++ {
						e := x4Elem(g, 0)
						copy(dst[32*g+8*j:32*g+8*j+8], src[32*j+e:32*j+e+8])
					}
				}
				rec := (*[16]int32)(a.sx[t*k/8+16*q:])
				for l := 0; l < 8; l++ {
					b := 4*q + l>>1
					rec[l] = int32(math.Float32bits(d[b]))
					rec[8+l] = 0
					if l&1 == 0 {
						rec[8+l] = c[8*b]
					}
				}
			}
		}
	})
}
