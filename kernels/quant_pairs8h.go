// This file holds the Q8_0 prefill GEMM over half-interleaved block pairs for CPUs without
// AVX-512 VNNI: the tiles q8_0TileH1xT (quant_pairs8h_amd64.s) load a row's block pair b, b+1
// from its GGUF layout as two registers, [w_b[0:16] | w_b1[0:16]] and [w_b[16:32] |
// w_b1[16:32]], and the tokens come in the same order (the pair layout q8Acts.xz of the Q4_0
// pair tiles). Both registers' integer lanes then belong to the same blocks (0..3: b, 4..7:
// b+1), so one VPADDD merges them where the pair tiles of quant_pairs8.go need a VPHADDD (three
// micro-ops on Zen 3), and one convert, one multiply by the weight scales and one FMA with the
// token's lane scales (q8Acts.dp) serve two blocks. Every T sums a row and token in the same
// order, so a row's result does not depend on m (MatMulInvariant runs the 1x1 tile for m = 1).
// The plain-Go twin is refTileH8.
package kernels

import "unsafe"

// tilesH8[T] are the half-interleaved Q8_0 pair tiles, one row x T = 1..8 tokens (nil where
// no assembly is installed). Arguments as tileFunc, with xs the token in pair order (q8Acts.xz,
// xstride = k), xd its lane scales (q8Acts.dp, k/2 bytes per token), corr unused and np
// counting block pairs.
var tilesH8 [9]tileFunc

// h8Toks is the most tokens per tile call in matmulQ8H; 0 turns these tiles off (the pair
// tiles of quant_pairs8.go run instead).
var h8Toks = 8

// useH8 reports whether matmulQ8Acts runs the half-interleaved Q8_0 tiles for k/32 = nb blocks.
func useH8(nb int) bool { return h8Toks > 0 && tilesH8[1] != nil && nb%2 == 0 }

// matmulQ8H runs out = x · wᵀ for Q8_0 weights ([n, k], k/32 even): work items of 16 rows x
// one token chunk (which stays in L2), taken dynamically by the workers; inside, groups of up
// to h8Toks tokens (kept in L1) against the item's rows one by one.
func matmulQ8H(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) {
	items, fn := h8Items(p, out, a, w, m, n, k)
	runItems(p, m, items, fn)
}

// h8Items prepares a's pair layout and returns matmulQ8H's work items: their number and the
// function computing item c.
func h8Items(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) (int, func(c int)) {
	a.prepH8(p)
	nb := k / 32
	rs, np, tc := nb*34, nb/2, tokenChunkZ(k)
	const rowsPer = 16
	T := h8Toks
	nrb := (n + rowsPer - 1) / rowsPer
	return nrb * ((m + tc - 1) / tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		// The chunk's tokens in ng groups of nearly equal size (at most T each).
		ng := (t1 - t0 + T - 1) / T
		for g, t := 0, t0; g < ng; g++ {
			tt := (t1 - t) / (ng - g)
			f := tilesH8[tt]
			for r := r0; r < r1; r++ {
				f(&w[r*rs], rs, &a.xz[t*k], k, &a.dp[t*k/8], nil, np, &out[t*n+r], n)
			}
			t += tt
		}
	}
}

// unitH8 returns the 8 integer lanes of one Q8_0 block pair (68 bytes of w) against one token
// (64 values x in pair order) as q8_0TileH1xT forms them: lane l sums the products of values
// 4i..4i+3 and 16+4i..16+4i+3 (i = l%4) of block l/4.
func unitH8(w []byte, x []int8) (lanes [8]int32) {
	for l := range lanes {
		blk, i := l>>2, l&3
		for _, j0 := range []int{4 * i, 16 + 4*i} {
			for j := j0; j < j0+4; j++ {
				lanes[l] += int32(int8(w[34*blk+2+j])) * int32(x[h8Pos(blk, j)])
			}
		}
	}
	return
}

// h8Pos is the position of value j (0..31) of block blk (0, 1) of a pair in the pair order
// x_b[0:16] x_b1[0:16] x_b[16:32] x_b1[16:32].
func h8Pos(blk, j int) int { return j&15 + 16*blk + 32*(j>>4) }

// dotH8Ref is the twin of one row and one token of q8_0TileH1xT over np block pairs: per lane
// acc = fma(float(lane)·dw, dx, acc), then l+4 onto l and (x0+x1)+(x2+x3).
func dotH8Ref(w []byte, xs []int8, dp []float32, np int) float32 {
	var acc [8]float32
	for p := 0; p < np; p++ {
		lanes := unitH8(w[68*p:], xs[64*p:])
		for l := range acc {
			dw := f16(w[68*p+34*(l>>2):])
			acc[l] = fma32(float32(lanes[l])*dw, dp[8*p+l], acc[l])
		}
	}
	x0, x1, x2, x3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (x0 + x1) + (x2 + x3)
}

// refTileH8 returns the Go twin of the half-interleaved Q8_0 tile kernel for one row x T
// tokens.
func refTileH8(T int) tileFunc {
	return func(w *byte, _ int, xs *int8, xstride int, xd *float32, _ *int32, np int, out *float32, ostride int) {
		ws := unsafe.Slice(w, np*68)
		n := (T-1)*xstride + np*64
		xv := unsafe.Slice(xs, n)
		dv := unsafe.Slice(xd, n/8)
		os := unsafe.Slice(out, (T-1)*ostride+1)
		for t := 0; t < T; t++ {
			o := t * xstride
			os[t*ostride] = dotH8Ref(ws, xv[o:], dv[o/8:], np)
		}
	}
}

// prepH8 computes the pair layout of all of a's tokens (nb even) as prepP does, without the
// Q4_0 corrections: the values in pair order (xz) and per pair the lane scales [dx_b x4,
// dx_b1 x4] (dp), in parallel over tokens on p.
func (a *q8Acts) prepH8(p *Pool) {
	if a.ready&(readyH8|readyP) != 0 {
		return
	}
	a.ready |= readyH8
	a.xz = grow(a.xz, a.m*a.k)
	a.dp = grow(a.dp, a.m*a.k/8)
	k, nb := a.k, a.nb
	p.For(a.m, 8, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			qs, d := a.qs[t*k:(t+1)*k], a.d[t*nb:(t+1)*nb]
			for i := 0; i < nb/2; i++ {
				q, x := qs[64*i:64*i+64], a.xz[t*k+64*i:t*k+64*i+64]
				copy(x[0:16], q[0:16])
				copy(x[16:32], q[32:48])
				copy(x[32:48], q[16:32])
				copy(x[48:64], q[48:64])
				d0, d1 := d[2*i], d[2*i+1]
				*(*[8]float32)(a.dp[t*k/8+8*i:]) = [8]float32{d0, d0, d0, d0, d1, d1, d1, d1}
			}
		}
	})
}
