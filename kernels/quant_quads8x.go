// This file holds the Q8_0 prefill GEMM over packed block quads for CPUs without AVX-512 VNNI:
// the tiles q8_0TileQ1xT (quant_quads8x_amd64.s) read a row of a Q8_0 pack (quant_q8pack.go:
// per quad of blocks b..b+3 the four float32 scales, then four registers each holding 8 values
// of every block, the order x4Elem of the Q4_0 quad tiles) against tokens in the same order
// (q8Acts.xq, with 8 lane scales per quad). Per row, token and quad: four sign-trick products,
// three VPADDD, one convert, one multiply by the scales and one FMA (18 micro-ops for four
// blocks, where the half-interleaved pair tiles of quant_pairs8h.go need 20 plus the per-row
// regrouping and fp16 scale conversion the pack has done once). Every T sums a row and token in
// the same order, so a row's result does not depend on m (MatMulInvariant runs the 1x1 tile
// for m = 1 when the weight has a pack). The plain-Go twin is refTileQ8X.
package kernels

import "unsafe"

// tilesQ8X[T] are the packed Q8_0 quad tiles, one row x T = 1..8 tokens (nil where no
// assembly is installed). Arguments as tileFunc, with w a packed row (144 bytes per quad), xs
// the token in quad order (q8Acts.xq, xstride = k), xd its lane scales (k/4 bytes per token),
// corr unused and np counting block quads.
var tilesQ8X [9]tileFunc

// q8xToks is the most tokens per tile call in matmulQ8X; 0 turns the packs off (the
// half-interleaved pair tiles run on the stored rows instead).
var q8xToks = 8

// matmulQ8X runs out = x · wᵀ for a packed Q8_0 weight pk ([n, k], k/32 a multiple of 4): work
// items of 16 rows x one token chunk (which stays in L2), taken dynamically by the workers;
// inside, groups of up to q8xToks tokens (kept in L1) against the item's rows one by one.
func matmulQ8X(p *Pool, out []float32, a *q8Acts, pk *q8Pack, m, n, k int) {
	items, fn := q8xItems(p, out, a, pk, m, n, k)
	runItems(p, m, items, fn)
}

// q8xItems prepares a's quad layout and returns matmulQ8X's work items: their number and the
// function computing item c.
func q8xItems(p *Pool, out []float32, a *q8Acts, pk *q8Pack, m, n, k int) (int, func(c int)) {
	a.prepQ8X(p)
	nq := k / 128
	rs, tc := nq*q8PackQuad, tokenChunkZ(k)
	const rowsPer = 16
	T := q8xToks
	nrb := (n + rowsPer - 1) / rowsPer
	w := pk.w
	return nrb * ((m + tc - 1) / tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		// The chunk's tokens in ng groups of nearly equal size (at most T each).
		ng := (t1 - t0 + T - 1) / T
		for g, t := 0, t0; g < ng; g++ {
			tt := (t1 - t) / (ng - g)
			f := tilesQ8X[tt]
			xd := (*float32)(unsafe.Pointer(&a.sx[t*k/16]))
			for r := r0; r < r1; r++ {
				f(&w[r*rs], rs, &a.xq[t*k], k, xd, nil, nq, &out[t*n+r], n)
			}
			t += tt
		}
	}
}

// dotQ8XRef is the twin of one row and one token of q8_0TileQ1xT over nq quads of a packed row
// w: lane l sums the products of bytes 4l..4l+3 of the four registers (block l/2), then acc =
// fma(float(lane)·dw, dx, acc), l+4 onto l and (x0+x1)+(x2+x3).
func dotQ8XRef(w []byte, xs []int8, dx []float32, nq int) float32 {
	var acc [8]float32
	for q := 0; q < nq; q++ {
		rec := w[q*q8PackQuad:]
		for l := range acc {
			var lane int32
			for g := 0; g < 4; g++ {
				for i := 4 * l; i < 4*l+4; i++ {
					lane += int32(int8(rec[16+32*g+i])) * int32(xs[128*q+32*g+i])
				}
			}
			dw := *(*float32)(unsafe.Pointer(&rec[4*(l>>1)]))
			acc[l] = fma32(float32(lane)*dw, dx[8*q+l], acc[l])
		}
	}
	x0, x1, x2, x3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (x0 + x1) + (x2 + x3)
}

// refTileQ8X returns the Go twin of the packed Q8_0 quad tile for one row x T tokens.
func refTileQ8X(T int) tileFunc {
	return func(w *byte, _ int, xs *int8, xstride int, xd *float32, _ *int32, nq int, out *float32, ostride int) {
		ws := unsafe.Slice(w, nq*q8PackQuad)
		n := (T-1)*xstride + nq*128
		xv := unsafe.Slice(xs, n)
		dv := unsafe.Slice(xd, n/16)
		os := unsafe.Slice(out, (T-1)*ostride+1)
		for t := 0; t < T; t++ {
			o := t * xstride
			os[t*ostride] = dotQ8XRef(ws, xv[o:], dv[o/16:], nq)
		}
	}
}

// prepQ8X computes the quad order xq of all of a's tokens (Q8_0 activations, nb a multiple of
// 4; byte 32g+8j+i of a quad is element x4Elem(g, i) of block b+j, as prepX4) and per quad the
// lane scales [dx_b, dx_b, dx_b1, dx_b1, dx_b2, dx_b2, dx_b3, dx_b3] in sx (float32 bits, k/16
// per token), in parallel over tokens on p.
func (a *q8Acts) prepQ8X(p *Pool) {
	if a.ready&readyQ8X != 0 {
		return
	}
	a.ready |= readyQ8X
	a.xq = grow(a.xq, a.m*a.k)
	a.sx = grow(a.sx, a.m*a.k/16)
	k, nb := a.k, a.nb
	p.For(a.m, 8, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			qs, d := a.qs[t*k:(t+1)*k], a.d[t*nb:(t+1)*nb]
			ds := unsafe.Slice((*float32)(unsafe.Pointer(&a.sx[t*k/16])), k/16)
			for q := 0; q < nb/4; q++ {
				src, dst := qs[128*q:128*q+128], a.xq[t*k+128*q:t*k+128*q+128]
				for g := 0; g < 4; g++ {
					for j := 0; j < 4; j++ {
						e := x4Elem(g, 0)
						copy(dst[32*g+8*j:32*g+8*j+8], src[32*j+e:32*j+e+8])
					}
				}
				for l := 0; l < 8; l++ {
					ds[8*q+l] = d[4*q+l>>1]
				}
			}
		}
	})
}
