// This file holds the Q4_0 prefill GEMM over block pairs for CPUs without AVX-512 VNNI: the
// 2-row x 4-token tile q4_0TileP2x4 (quant_pairs_amd64.s) reads the activations in pair order
// (q8Acts.prepP: values x_b[0:16] x_b1[0:16] x_b[16:32] x_b1[16:32] as for the VNNI kernels,
// and 8 lane scales and 8 lane corrections per pair), so one ymm holds the nibbles of two
// blocks and a block costs 4 vector ops instead of the 6 of q4_0Tile2x4. The
// token and row tails run the 1..2 x 1..3 pair tiles, which sum each row and token in the same
// order, so a row's result does not depend on m (MatMulInvariant runs the 1x1 tile for m = 1).
// The plain-Go twin is refTileP.
package kernels

import "unsafe"

// tilesP[R][T] are the pair tile kernels, R = 1, 2 rows x T = 1..4 tokens (nil where no assembly
// is installed; matmulQ8Acts then runs the block tiles). Their arguments are those of tileFunc
// with xs, xd and corr pointing into the pair layout (xz, dp, cp), xstride = k (xd and corr
// advance k/2 bytes per token), and nb counting block pairs.
var tilesP [3][5]tileFunc

// pairsTokensOuter selects matmulP's loop order inside a work item: four tokens against all the
// item's rows (true), or two rows against all the chunk's tokens (benchmarks compare the two).
var pairsTokensOuter = true

// usePairs reports whether the pair tiles are installed.
func usePairs() bool { return tilesP[2][4] != nil }

// matmulP runs out = x · wᵀ for Q4_0 weights ([n, k], k/32 even): work items of 16 rows x one
// token chunk (whose pair layout stays in L2), taken dynamically by the workers; inside, four
// tokens at a time (their layout, 8 KiB per 1024 values, stays in L1) against the item's rows
// two at a time, 2x4 pair tiles, smaller pair tiles for the last tokens (m % 4) and an odd last
// row.
func matmulP(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) {
	items, fn := pItems(p, out, a, w, m, n, k)
	forDynamic(p, items, fn)
}

// pItems prepares a's pair layout and returns matmulP's work items: their number and the
// function computing item c.
func pItems(p *Pool, out []float32, a *q8Acts, w []byte, m, n, k int) (int, func(c int)) {
	a.prepP(p)
	nb := k / 32
	rs, np, tc := nb*18, nb/2, tokenChunkZ(k)
	const rowsPer = 16
	nrb := (n + rowsPer - 1) / rowsPer
	return nrb * ((m + tc - 1) / tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		tile := func(r, t int) {
			tilesP[min(2, r1-r)][min(4, t1-t)](&w[r*rs], rs, &a.xz[t*k], k, &a.dp[t*k/8], &a.cp[t*k/8], np, &out[t*n+r], n)
		}
		if !pairsTokensOuter {
			for r := r0; r < r1; r += 2 {
				for t := t0; t < t1; t += 4 {
					tile(r, t)
				}
			}
			return
		}
		for t := t0; t < t1; t += 4 {
			for r := r0; r < r1; r += 2 {
				tile(r, t)
			}
		}
	}
}

// unitP returns the 8 integer lanes of one Q4_0 block pair against one token in pair order, as
// q4_0TileP2x4 forms them: lanes 0..3 from block b (36-byte w: two blocks), 4..7 from block
// b+1, each over 4 low-nibble and 4 high-nibble products, starting from the corrections cz.
func unitP(w []byte, x []int8, cz []int32) (lanes [8]int32) {
	copy(lanes[:], cz[:8])
	for i := 0; i < 8; i++ {
		for pos := 4 * i; pos < 4*i+4; pos++ {
			b := w[2+pos]
			if pos >= 16 {
				b = w[18+2+pos-16]
			}
			lanes[i] += int32(b&0xf)*int32(x[pos]) + int32(b>>4)*int32(x[32+pos])
		}
	}
	return
}

// dotPRef is the twin of one row and one token of q4_0TileP2x4 over np block pairs: per lane
// acc = fma(float(lane)·dw, dx, acc), then l+4 onto l and (x0+x1)+(x2+x3).
func dotPRef(w []byte, xs []int8, dz []float32, cz []int32, np int) float32 {
	var acc [8]float32
	for p := 0; p < np; p++ {
		lanes := unitP(w[36*p:], xs[64*p:], cz[8*p:])
		d0, d1 := f16(w[36*p:]), f16(w[36*p+18:])
		for l := range acc {
			dw := d0
			if l >= 4 {
				dw = d1
			}
			acc[l] = fma32(float32(lanes[l])*dw, dz[8*p+l], acc[l])
		}
	}
	x0, x1, x2, x3 := acc[0]+acc[4], acc[1]+acc[5], acc[2]+acc[6], acc[3]+acc[7]
	return (x0 + x1) + (x2 + x3)
}

// refTileP returns the Go twin of the pair tile kernel for R rows x T tokens.
func refTileP(R, T int) tileFunc {
	return func(w *byte, wstride int, xs *int8, xstride int, xd *float32, corr *int32, np int, out *float32, ostride int) {
		ws := unsafe.Slice(w, (R-1)*wstride+np*36)
		n := (T-1)*xstride + np*64
		xv := unsafe.Slice(xs, n)
		dv := unsafe.Slice(xd, n/8)
		cv := unsafe.Slice(corr, n/8)
		os := unsafe.Slice(out, (T-1)*ostride+R)
		for t := 0; t < T; t++ {
			o := t * xstride
			for r := 0; r < R; r++ {
				os[t*ostride+r] = dotPRef(ws[r*wstride:], xv[o:], dv[o/8:], cv[o/8:], np)
			}
		}
	}
}

// prepP computes the pair layout of all of a's tokens (a quantized already, with the Q4_0
// corrections; nb even), in parallel over tokens on p.
func (a *q8Acts) prepP(p *Pool) {
	if a.ready&readyP != 0 {
		return
	}
	a.ready |= readyP
	a.xz = grow(a.xz, a.m*a.k)
	a.dp = grow(a.dp, a.m*a.k/8)
	a.cp = grow(a.cp, a.m*a.k/8)
	k, nb := a.k, a.nb
	p.For(a.m, 8, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			qs, d, c := a.qs[t*k:(t+1)*k], a.d[t*nb:(t+1)*nb], a.corr[t*nb*8:(t+1)*nb*8]
			for i := 0; i < nb/2; i++ {
				q, x := qs[64*i:64*i+64], a.xz[t*k+64*i:t*k+64*i+64]
				copy(x[0:16], q[0:16])
				copy(x[16:32], q[32:48])
				copy(x[32:48], q[16:32])
				copy(x[48:64], q[48:64])
				d0, d1 := d[2*i], d[2*i+1]
				*(*[8]float32)(a.dp[t*k/8+8*i:]) = [8]float32{d0, d0, d0, d0, d1, d1, d1, d1}
				*(*[8]int32)(a.cp[t*k/8+8*i:]) = [8]int32{c[16*i], 0, 0, 0, c[16*i+8], 0, 0, 0}
			}
		}
	})
}
