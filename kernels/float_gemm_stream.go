// This file implements the row ranges of gemmStream, the AVX2 GEMM for F16 weights and m > 1
// (run as dynamic items by float_gemm_items.go): the activations are packed tile by tile (3
// rows interleaved per 8 columns, so a tile is one contiguous L1-resident stream); per k
// block, blocks of the item's stored F16 weight rows (L2-resident) then stream through the
// packed-tile micro-kernel, converted in registers.
// Every output is summed in gemmDirect's order, so results are bit-identical to it and do not
// depend on m. See docs/kernels-float.md.
package kernels

import (
	"sync"
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// useGemmStream selects gemmStream for F16 weights on the AVX2 family (benchmarks and tests
// compare it with gemmDirect/gemmPacked).
var useGemmStream = true

// streamNB is the number of weight rows in one L2 block of gemmStream (x gemmKC F16 columns:
// 192 KiB, next to a packed activation block of up to 64 x gemmKC f32 = 128 KiB).
const streamNB = 192

// streamRows computes rows [r0, r1) of out = x · wᵀ (x [m, k], w [n, k] F16 in data, out
// [m, n]) for gemmStream: pk holds x packed by packTiles3, k block k0 at pk[mt*k0:]. Per k
// block, blocks of streamNB weight rows are packed (L2-resident) and every activation tile
// runs over them.
func streamRows(out, x, pk []float32, data []byte, m, n, k, r0, r1 int) {
	ts := &avx2Tiles
	kv := k &^ 7
	mt := (m + 2) / 3 * 3 // rows in tiles of 3; the last tile is padded with zero rows
	w := f16Words(data, n, k)
	wb := wBufs.Get().(*[streamNB * gemmKC]uint16)
	defer wBufs.Put(wb)
	var tmp [12]float32 // the last tile's outputs when it has fewer than 3 rows
	for k0 := 0; k0 < kv; k0 += gemmKC {
		kb := min(gemmKC, kv-k0)
		acc := min(k0, 1)
		buf := pk[mt*k0:]
		for nb0 := r0; nb0 < r1; nb0 += streamNB {
			nb1 := min(nb0+streamNB, r1)
			nf := nb0 + (nb1-nb0)&^3 // end of the full groups of 4 rows
			if streamPackW {
				packGroups4(wb[:], w, nb0, nf, k, k0, kb)
			}
			for i0 := 0; i0 < mt; i0 += 3 {
				a := &buf[i0*kb]
				mr := min(3, m-i0)
				for r := nb0; r < nf; r += 4 {
					c, ldc, cacc := &out[i0*n+r], 4*n, acc
					if mr < 3 {
						c, ldc, cacc = &tmp[0], 16, 0
					}
					if streamPackW {
						gemmF16PP3x4(a, &wb[(r-nb0)*kb], kb, c, ldc, cacc)
					} else {
						gemmF16PA3x4(a, &w[r*k+k0], 2*k, kb, c, ldc, cacc)
					}
					if mr < 3 {
						addTile(out[i0*n+r:], n, tmp[:], mr, 4, acc)
					}
				}
				if nf < nb1 {
					ts.tile(tensor.F16, mr, nb1-nf, &x[i0*k+k0], 4*k, unsafe.Pointer(&w[nf*k+k0]), 2*k, kb, &out[i0*n+nf], 4*n, acc)
				}
			}
		}
	}
	addKTail(out, x, tensor.F16, data, m, n, k, kv, r0, r1)
}

// addTile sets (acc == 0) or adds to (acc != 0) out[i*n+j] the 3x4 tile outputs t[4i+j] for
// i < mr, j < nr: the same single rounding as the kernel's own store.
func addTile(out []float32, n int, t []float32, mr, nr, acc int) {
	for i := 0; i < mr; i++ {
		for j := 0; j < nr; j++ {
			if acc != 0 {
				out[i*n+j] += t[4*i+j]
			} else {
				out[i*n+j] = t[4*i+j]
			}
		}
	}
}

// directPrefetch makes gemmDirectF16 prefetch the next group of weight rows (from DRAM in a
// model's forward pass) before running the activation tiles over the current one.
var directPrefetch = true

// directF16Rows computes rows [r0, r1) of out = x · wᵀ for gemmDirectF16 (2 <= m <=
// gemmDirectMaxM): gemmDirect's loop order and sums, with the activations packed into tiles of
// 3 rows per k block in pk (as for streamRows; one sequential L2 stream per tile instead of
// three rows 4k bytes apart), the next group of weight rows prefetched while the tiles run
// over the current one.
func directF16Rows(out, x, pk []float32, data []byte, m, n, k, r0, r1 int) {
	ts := &avx2Tiles
	kv := k &^ 7
	mt := (m + 2) / 3 * 3
	w := f16Words(data, n, k)
	var tmp [12]float32
	for k0 := 0; k0 < kv; k0 += gemmKC {
		kb := min(gemmKC, kv-k0)
		acc := min(k0, 1)
		buf := pk[mt*k0:]
		for r := r0; r < r1; r += 4 {
			nr := min(4, r1-r)
			if directPrefetch && r+4 < r1 {
				prefetchRows(&data[((r+4)*k+k0)*2], 2*k, min(4, r1-r-4), 2*kb)
			}
			if nr < 4 {
				for i0 := 0; i0 < m; i0 += 3 {
					ts.tile(tensor.F16, min(3, m-i0), nr, &x[i0*k+k0], 4*k, unsafe.Pointer(&w[r*k+k0]), 2*k, kb, &out[i0*n+r], 4*n, acc)
				}
				continue
			}
			i0 := 0
			for ; i0+3 <= m; i0 += 3 {
				if directPackA {
					gemmF16PA3x4(&buf[i0*kb], &w[r*k+k0], 2*k, kb, &out[i0*n+r], 4*n, acc)
				} else {
					ts.f16[3][4](&x[i0*k+k0], 4*k, &w[r*k+k0], 2*k, kb, &out[i0*n+r], 4*n, acc)
				}
			}
			if i0 < m {
				if directPackA {
					gemmF16PA3x4(&buf[i0*kb], &w[r*k+k0], 2*k, kb, &tmp[0], 16, 0)
					addTile(out[i0*n+r:], n, tmp[:], m-i0, 4, acc)
				} else {
					ts.tile(tensor.F16, m-i0, 4, &x[i0*k+k0], 4*k, unsafe.Pointer(&w[r*k+k0]), 2*k, kb, &out[i0*n+r], 4*n, acc)
				}
			}
		}
	}
	addKTail(out, x, tensor.F16, data, m, n, k, kv, r0, r1)
}

// directPackA makes gemmDirectF16 pack the activation tiles (benchmarks compare it with the
// rows read in place).
var directPackA = true

// streamPackW makes gemmStream copy each block of weight rows to a contiguous buffer (groups
// of 4 rows interleaved per 8 columns) before the activation tiles run over it: rows of
// 2^j bytes (k = 2048) otherwise map to a few L1/L2 sets.
var streamPackW = true

var wBufs = sync.Pool{New: func() any { return new([streamNB * gemmKC]uint16) }}

// packGroups4 writes columns [k0, k0+kb) of weight rows [r0, r1) (r1-r0 a multiple of 4, row
// stride k) to dst group by group: group g (rows r0+4g..r0+4g+3) at dst[4g*kb:], for each 8
// columns the 8 values of its rows in order.
func packGroups4(dst, w []uint16, r0, r1, k, k0, kb int) {
	for r := r0; r < r1; r += 4 {
		packW4(&dst[(r-r0)*kb], &w[r*k+k0], 2*k, kb)
	}
}

// packTiles3 writes columns [k0, k0+kb) of the m rows of x (row stride k) to dst tile by
// tile: tile t (rows 3t..3t+2, rows past m as zeros) at dst[3t*kb:], for each 8 columns the 8
// values of its first, second and third row.
func packTiles3(dst, x []float32, m, k, k0, kb int) {
	var zero [gemmKC]float32
	row := func(i int) []float32 {
		if i >= m {
			return zero[:kb]
		}
		return x[i*k+k0 : i*k+k0+kb]
	}
	i0 := 0
	for ; i0+3 <= m; i0 += 3 {
		packA3(&dst[i0*kb], &x[i0*k+k0], 4*k, kb)
	}
	for ; i0 < m; i0 += 3 {
		d := dst[i0*kb : (i0+3)*kb]
		r0, r1, r2 := row(i0), row(i0+1), row(i0+2)
		for s := 0; s+8 <= kb; s += 8 {
			o := 3 * s
			*(*[8]float32)(d[o:]) = *(*[8]float32)(r0[s:])
			*(*[8]float32)(d[o+8:]) = *(*[8]float32)(r1[s:])
			*(*[8]float32)(d[o+16:]) = *(*[8]float32)(r2[s:])
		}
	}
}
