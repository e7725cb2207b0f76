// This file holds the Q4_0 prefill GEMM over packed block quads for CPUs without AVX-512 VNNI:
// the tiles q4_0TileK1xT (quant_quads4p_amd64.s) compute exactly what the cross-interleaved quad
// tiles q4_0TileX1xT of quant_quads4x.go compute, bit for bit, but read a row of a Q4_0 pack
// (quant_q8pack.go: per quad of blocks b..b+3 the four scales as float32, then the nibble bytes
// [b[0:8] b1[0:8] b2[0:8] b3[0:8]] and the same of bytes 8..15, 80 bytes where the GGUF rows
// take 72), so the per-row regrouping and fp16 scale conversion are done once at packing. The
// tokens are those of the X4 tiles (q8Acts.xq, sx). The plain-Go twin is refTileQ4P.
package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// tilesQ4P[T] are the packed Q4_0 quad tiles, one row x T = 1..8 tokens (nil where no assembly
// is installed). Arguments as tilesX4's, with w a packed row (80 bytes per quad).
var tilesQ4P [9]tileFunc

// q4PackQuad is the bytes of one block quad of a packed Q4_0 row.
const q4PackQuad = 80

// matmulQ4XP runs out = x · wᵀ for a packed Q4_0 weight pk ([n, k], k/32 a multiple of 4) as
// matmulQ4X does over the stored rows (same items, same token groups, same bits).
func matmulQ4XP(p *Pool, out []float32, a *q8Acts, pk *q8Pack, m, n, k int) {
	items, fn := q4pItems(p, out, a, pk, m, n, k)
	runItems(p, m, items, fn)
}

// q4pItems prepares a's quad layout and returns matmulQ4XP's work items: their number and the
// function computing item c.
func q4pItems(p *Pool, out []float32, a *q8Acts, pk *q8Pack, m, n, k int) (int, func(c int)) {
	a.prepX4(p)
	nq := k / 128
	rs, tc := nq*q4PackQuad, tokenChunkZ(k)
	const rowsPer = 16
	T := x4Toks
	nrb := (n + rowsPer - 1) / rowsPer
	w := pk.w
	return nrb * ((m + tc - 1) / tc), func(c int) {
		t0, r0 := c/nrb*tc, c%nrb*rowsPer
		t1, r1 := min(t0+tc, m), min(r0+rowsPer, n)
		// The chunk's tokens in ng groups of nearly equal size (at most T each).
		ng := (t1 - t0 + T - 1) / T
		for g, t := 0, t0; g < ng; g++ {
			tt := (t1 - t) / (ng - g)
			f := tilesQ4P[tt]
			xd := (*float32)(unsafe.Pointer(&a.sx[t*k/8]))
			for r := r0; r < r1; r++ {
				f(&w[r*rs], rs, &a.xq[t*k], k, xd, nil, nq, &out[t*n+r], n)
			}
			t += tt
		}
	}
}

// packQ4Row writes one row's GGUF Q4_0 blocks src (18 bytes each, a multiple of 4 blocks) in
// the packed layout to dst.
func packQ4Row(dst, src []byte) {
	le := binary.LittleEndian
	for q := 0; q < len(src)/72; q++ {
		rec, blks := dst[q*q4PackQuad:(q+1)*q4PackQuad], src[q*72:(q+1)*72]
		for j := 0; j < 4; j++ {
			le.PutUint32(rec[4*j:], math.Float32bits(f16(blks[18*j:])))
			le.PutUint64(rec[16+8*j:], le.Uint64(blks[18*j+2:]))
			le.PutUint64(rec[48+8*j:], le.Uint64(blks[18*j+10:]))
		}
	}
}

// unpackQ4Row is packQ4Row's inverse (the scales back to fp16, which is exact).
func unpackQ4Row(dst, src []byte) {
	le := binary.LittleEndian
	for q := 0; q < len(src)/q4PackQuad; q++ {
		rec, blks := src[q*q4PackQuad:(q+1)*q4PackQuad], dst[q*72:(q+1)*72]
		for j := 0; j < 4; j++ {
			le.PutUint16(blks[18*j:], tensor.F32ToF16(math.Float32frombits(le.Uint32(rec[4*j:]))))
			le.PutUint64(blks[18*j+2:], le.Uint64(rec[16+8*j:]))
			le.PutUint64(blks[18*j+10:], le.Uint64(rec[48+8*j:]))
		}
	}
}

// refTileQ4P returns the Go twin of the packed Q4_0 quad tile for one row x T tokens: the X4
// tile's twin on the row unpacked.
func refTileQ4P(T int) tileFunc {
	return func(w *byte, ws int, xs *int8, xstride int, xd *float32, corr *int32, nq int, out *float32, ostride int) {
		row := make([]byte, nq*72)
		unpackQ4Row(row, unsafe.Slice(w, nq*q4PackQuad))
		refTileX4(T)(&row[0], ws, xs, xstride, xd, corr, nq, out, ostride)
	}
}
