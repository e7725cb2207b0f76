// This file holds the Q8_0 prefill GEMM over block pairs for CPUs without AVX-512 VNNI: the
// tiles q8_0TilePRxT (quant_pairs8_amd64.s) read the weights in their GGUF layout and the
// activations in their natural order; per row, token and block pair the integer lanes of the
// two blocks are merged into one register (VPHADDD: lanes 0,1,4,5 from block b, 2,3,6,7 from
// b+1), so one convert, one multiply by the weight scales and one FMA with the token's lane
// scales (q8Acts.d8) serve two blocks. Every tile shape sums a row and token in the same order,
// so a row's result does not depend on m (MatMulInvariant runs the 1x1 tile for m = 1). The
// plain-Go twin is refTileP8.
package kernels

import "unsafe"

// tilesP8[R][T] are the Q8_0 pair tiles, R = 1 row x T = 1..8 tokens and R = 2 rows x T = 1..3
// tokens (nil where no assembly is installed; matmulQ8Acts then runs the block tiles). Their
// arguments are those of tileFunc with xs the token's values (xstride = k), xd its lane scales
// (q8Acts.d8, k/2 bytes per token), corr unused and nb counting block pairs.
var tilesP8 [3][9]tileFunc

// p8Rows and p8Toks are the tile shape matmulP8 runs (benchmarks compare shapes).
var p8Rows, p8Toks = 1, 8

// usePairs8 reports whether the Q8_0 pair tiles are installed.
func usePairs8() bool { return tilesP8[1][1] != nil }

// matmulP8 runs out = x · wᵀ for Q8_0 weights ([n, k], k/32 even): work items of 16 rows x one
// token chunk (which stays in L2), taken dynamically by the workers; inside, groups of up to
// p8Toks tokens (kept in L1) against the item's rows p8Rows at a time.
func matmulP8(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) {
	items, fn := p8Items(p, out, a, w, m, n, k)
	runItems(p, m, items, fn)
}

// p8Items prepares a's pair scales and returns matmulP8's work items: their number and the
// function computing item c.
func p8Items(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) (int, func(c int)) {
	a.prepP8(p)
	nb := k / 32
	rs, np, tc := nb*34, nb/2, tokenChunkZ(k)
	const rowsPer = 16
	R, T := p8Rows, p8Toks
	nrb := (n + rowsPer - 1) / rowsPer
	return nrb * ((m + tc - 1) / tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		// The chunk's tokens in ng groups of nearly equal size (at most T each), so no group is
		// left with one or two tokens to carry the per-row work alone.
		ng := (t1 - t0 + T - 1) / T
		for g, t := 0, t0; g < ng; g++ {
			tt := (t1 - t) / (ng - g)
			for r := r0; r < r1; r += R {
				tilesP8[min(R, r1-r)][tt](&w[r*rs], rs, &a.qs[t*k], k, &a.d8[t*k/8], nil, np, &out[t*n+r], n)
			}
			t += tt
		}
	}
}

// unitP8 returns the 8 integer lanes of one Q8_0 block pair (68 bytes of w) against one token
// (64 values x) as q8_0TilePRxT forms them: lanes 0, 1, 4, 5 sum 8 products each of block b
// (values 0..7, 8..15, 16..23, 24..31), lanes 2, 3, 6, 7 the same of block b+1.
func unitP8(w []byte, x []int8) (lanes [8]int32) {
	for l := range lanes {
		blk, part := l>>1&1, l&1+l>>2*2
		for j := 8 * part; j < 8*part+8; j++ {
			lanes[l] += int32(int8(w[34*blk+2+j])) * int32(x[32*blk+j])
		}
	}
	return
}

// dotP8Ref is the twin of one row and one token of q8_0TilePRxT over np block pairs: per lane
// acc = fma(float(lane)·dw, dx, acc), then l+4 onto l and (x0+x1)+(x2+x3).
func dotP8Ref(w []byte, xs []int8, d8 []float32, np int) float32 {
	var acc [8]float32
	for p := 0; p < np; p++ {
		lanes := unitP8(w[68*p:], xs[64*p:])
		d0, d1 := f16(w[68*p:]), f16(w[68*p+34:])
		for l := range acc {
			dw := d0
			if l&2 != 0 {
				dw = d1
			}
			acc[l] = fma32(float32(lanes[l])*dw, d8[8*p+l], acc[l])
		}
	}
	x0, x1, x2, x3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (x0 + x1) + (x2 + x3)
}

// refTileP8 returns the Go twin of the Q8_0 pair tile kernel for R rows x T tokens.
func refTileP8(R, T int) tileFunc {
	return func(w *byte, wstride int, xs *int8, xstride int, xd *float32, _ *int32, np int, out *float32, ostride int) {
		ws := unsafe.Slice(w, (R-1)*wstride+np*68)
		n := (T-1)*xstride + np*64
		xv := unsafe.Slice(xs, n)
		dv := unsafe.Slice(xd, n/8)
		os := unsafe.Slice(out, (T-1)*ostride+R)
		for t := 0; t < T; t++ {
			o := t * xstride
			for r := 0; r < R; r++ {
				os[t*ostride+r] = dotP8Ref(ws[r*wstride:], xv[o:], dv[o/8:], np)
			}
		}
	}
}

// prepP8 computes the pair lane scales d8 of all of a's tokens (nb even): per pair
// [dx_b, dx_b, dx_b1, dx_b1] twice, in parallel over tokens on p.
func (a *q8Acts) prepP8(p *Pool) {
	if a.ready&readyP8 != 0 {
		return
	}
	a.ready |= readyP8
	a.d8 = grow(a.d8, a.m*a.k/8)
	k, nb := a.k, a.nb
	p.For(a.m, 64, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			d := a.d[t*nb : (t+1)*nb]
			for i := 0; i < nb/2; i++ {
				d0, d1 := d[2*i], d[2*i+1]
				*(*[8]float32)(a.d8[t*k/8+8*i:]) = [8]float32{d0, d0, d1, d1, d0, d0, d1, d1}
			}
		}
	})
}
