// This file holds the Q4_0 prefill tiles over block quads for CPUs without AVX-512 VNNI
// (q4_0TileQ1xT, quant_pairs_amd64.s): two pair units of the pair tiles (quant_pairs.go) and one
// VPHADDD put the integer lanes of four blocks into one register (lanes 0,1 block b, 2,3 b+2,
// 4,5 b+1, 6,7 b+3), so one correction add, one convert, one multiply by the weight scales and
// one FMA with the token's lane scales serve four blocks. Tokens in the pair layout (xz) with
// one record per quad of 8 lane scales and 8 lane corrections (q8Acts.sq). Every T sums a row
// and token in the same order (batch invariance). The plain-Go twin is refTileQ4.
package kernels

import (
	"math"
	"unsafe"
)

// tilesQ4[T] are the Q4_0 quad tiles, one row x T = 1..7 tokens (nil where no assembly is
// installed). Arguments as tileFunc, with xs the token in pair layout (xstride = k), xd its quad
// records (q8Acts.sq, k/2 bytes per token), corr unused and nb counting block quads.
var tilesQ4 [8]tileFunc

// q4Toks is the most tokens per quad tile call in matmulQ4Quads; 0 turns the quad tiles off.
var q4Toks = 7

// useQuads4 reports whether matmulQ8Acts runs the Q4_0 quad tiles for k/32 = nb blocks.
func useQuads4(nb int) bool { return q4Toks > 0 && tilesQ4[1] != nil && nb%4 == 0 }

// matmulQ4Quads runs out = x · wᵀ for Q4_0 weights ([n, k], k/32 a multiple of 4): work items of
// 16 rows x one token chunk (which stays in L2), taken dynamically by the workers; inside,
// groups of up to q4Toks tokens (kept in L1) against the item's rows one by one.
func matmulQ4Quads(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) {
	items, fn := q4QuadItems(p, out, a, w, m, n, k)
	runItems(p, m, items, fn)
}

// q4QuadItems prepares a's quad layout and returns matmulQ4Quads' work items: their number and
// the function computing item c.
func q4QuadItems(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) (int, func(c int)) {
	a.prepQ4(p)
	nb := k / 32
	rs, nq, tc := nb*18, nb/4, tokenChunkZ(k)
	const rowsPer = 16
	T := q4Toks
	nrb := (n + rowsPer - 1) / rowsPer
	return nrb * ((m + tc - 1) / tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		// The chunk's tokens in ng groups of nearly equal size (at most T each).
		ng := (t1 - t0 + T - 1) / T
		for g, t := 0, t0; g < ng; g++ {
			tt := (t1 - t) / (ng - g)
			f := tilesQ4[tt]
			for r := r0; r < r1; r++ {
				f(&w[r*rs], rs, &a.xz[t*k], k, (*float32)(unsafe.Pointer(&a.sq[t*k/8])), nil, nq, &out[t*n+r], n)
			}
			t += tt
		}
	}
}

// quadBlock is the block (0..3 within the quad) of each lane of the Q4_0 quad tiles.
var quadBlock = [8]int{0, 0, 2, 2, 1, 1, 3, 3}

// dotQ4Ref is the twin of one row and one token of q4_0TileQ1xT over nq block quads: lane l is
// the sum of pair-unit lanes u, u+1 (unitP of the quad's pair l>>1&1, u = 4·(l>>2) + 2·(l&1),
// which carry the block's correction in lane 0 / 4), then acc = fma(float(lane)·dw, dx, acc),
// l+4 onto l and (x0+x1)+(x2+x3).
func dotQ4Ref(w []byte, xs []int8, sq []int32, nq int) float32 {
	var acc [8]float32
	for q := 0; q < nq; q++ {
		rec := sq[16*q : 16*q+16]
		var units [2][8]int32
		for i := range units {
			var cz [8]int32
			for l := 0; l < 8; l++ {
				if quadBlock[l]>>1 == i && l&1 == 0 { // this pair's corrections, lane 0 (b) / 4 (b+1)
					cz[4*(l>>2)] = rec[8+l]
				}
			}
			units[i] = unitP(w[72*q+36*i:], xs[128*q+64*i:], cz[:])
		}
		for l := range acc {
			u := units[l>>1&1]
			o := 4*(l>>2) + 2*(l&1)
			dw := f16(w[72*q+18*quadBlock[l]:])
			acc[l] = fma32(float32(u[o]+u[o+1])*dw, math.Float32frombits(uint32(rec[l])), acc[l])
		}
	}
	x0, x1, x2, x3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (x0 + x1) + (x2 + x3)
}

// refTileQ4 returns the Go twin of the Q4_0 quad tile kernel for one row x T tokens.
func refTileQ4(T int) tileFunc {
	return func(w *byte, wstride int, xs *int8, xstride int, xd *float32, _ *int32, nq int, out *float32, ostride int) {
		ws := unsafe.Slice(w, nq*72)
		n := (T-1)*xstride + nq*128
		xv := unsafe.Slice(xs, n)
		dv := unsafe.Slice((*int32)(unsafe.Pointer(xd)), n/8)
		os := unsafe.Slice(out, (T-1)*ostride+1)
		for t := 0; t < T; t++ {
			o := t * xstride
			os[t*ostride] = dotQ4Ref(ws, xv[o:], dv[o/8:], nq)
		}
	}
}

// prepQ4 computes the pair layout (prepP) and the quad records sq of all of a's tokens (with
// the Q4_0 corrections; nb a multiple of 4): per quad the lane scales [dx_b, dx_b, dx_b2,
// dx_b2, dx_b1, dx_b1, dx_b3, dx_b3] (float32 bits), then the lane corrections [c_b, 0, c_b2,
// 0, c_b1, 0, c_b3, 0].
func (a *q8Acts) prepQ4(p *Pool) {
	a.prepP(p)
	if a.ready&readyQ4 != 0 {
		return
	}
	a.ready |= readyQ4
	a.sq = grow(a.sq, a.m*a.k/8)
	k, nb := a.k, a.nb
	p.For(a.m, 64, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			d, c := a.d[t*nb:(t+1)*nb], a.corr[t*nb*8:(t+1)*nb*8]
			for i := 0; i < nb/4; i++ {
				rec := (*[16]int32)(a.sq[t*k/8+16*i:])
				for l := 0; l < 8; l++ {
					b := 4*i + quadBlock[l]
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
