// This file implements the blocked float GEMMs (two or more activation rows) on a family of
// dot-product micro-kernels from float_amd64.s: AVX2 tiles of 3 activation rows x 4 weight rows
// (8 lanes), or AVX-512 tiles of 4 x 6 (16 lanes) where the CPU has it. gemmDirect runs the
// kernels on the stored F32/F16/BF16 rows (converted in registers) for small m; gemmPacked
// converts blocks of weight rows to f32 once per worker and reuses them for every activation
// tile. Both sum every output in the same order — k blocks of 512 from column 0 over the
// family's lanes, then the k % lanes tail in Go — so a row's result does not depend on m
// (batch invariance) within one family. See docs/kernels-float.md.
package kernels

import (
	"unsafe"

	"github.com/llmcloud/llmcloud/tensor"
)

// gemmF32Fn and gemmU16Fn are the micro-kernels' signatures: C[i, j] (=, or += with acc != 0)
// the dot product of f32 A row i and weight row j over k (a multiple of the lanes); strides in
// bytes.
type (
	gemmF32Fn = func(a *float32, lda int, b *float32, ldb int, k int, c *float32, ldc int, acc int)
	gemmU16Fn = func(a *float32, lda int, b *uint16, ldb int, k int, c *float32, ldc int, acc int)
	attnPVFn  = func(out *float32, ldo int, p *float32, ldp int, v *float32, ldv int, nb int)
)

// floatTiles is one family of micro-kernels: tiles of up to mr activation rows x nr weight
// rows over k in multiples of lanes; packed blocks hold nc weight rows.
type floatTiles struct {
	mr, nr, lanes, nc int
	f32               *[5][7]gemmF32Fn
	f16, bf16         *[5][7]gemmU16Fn
}

var (
	avx2Tiles   = floatTiles{mr: 3, nr: 4, lanes: 8, nc: 128, f32: &gemmF32Kernels, f16: &gemmF16Kernels, bf16: &gemmBF16Kernels}
	avx512Tiles = floatTiles{mr: 4, nr: 6, lanes: 16, nc: 144, f32: &gemmZF32Kernels, f16: &gemmZF16Kernels, bf16: &gemmZBF16Kernels}
)

// gemmTiles is the family this CPU runs.
func gemmTiles() *floatTiles {
	if useAVX512 {
		return &avx512Tiles
	}
	return &avx2Tiles
}

// tile runs the mr x nr kernel for weight type dt on weight rows at w (stride ldw bytes).
func (t *floatTiles) tile(dt tensor.DType, mr, nr int, a *float32, lda int, w unsafe.Pointer, ldw, kb int, c *float32, ldc, acc int) {
	switch dt {
	case tensor.F32:
		t.f32[mr][nr](a, lda, (*float32)(w), ldw, kb, c, ldc, acc)
	case tensor.F16:
		t.f16[mr][nr](a, lda, (*uint16)(w), ldw, kb, c, ldc, acc)
	case tensor.BF16:
		t.bf16[mr][nr](a, lda, (*uint16)(w), ldw, kb, c, ldc, acc)
	}
}

// GEMM blocking: k blocks of gemmKC columns (a packed block of nc weight rows x gemmKC f32 is
// 256–288 KiB, L2-resident). gemmDirect reuses an activation block of directMB rows (L2) for
// every group of weight rows, and each group's gemmKC columns (L1) for every activation tile.
const (
	gemmKC   = 512
	directMB = 96
)

// gemmDirectMaxM is the largest m that runs the micro-kernels directly on the stored weights
// (converted in registers, no packing); larger m packs f32 blocks once and reuses them.
var gemmDirectMaxM = 64

// gemmDirect computes out = x · wᵀ (x [m, k], w [n, k] of type dt in data, out [m, n]) with the
// micro-kernels reading the stored weight rows. Weight rows are split across workers.
func gemmDirect(p *Pool, out, x []float32, dt tensor.DType, data []byte, m, n, k int) {
	ts := gemmTiles()
	es := elemSize(dt)
	kv := k &^ (ts.lanes - 1)
	groups := (n + ts.nr - 1) / ts.nr
	minGroups := max(1, (64<<10)/(ts.nr*k*es), (1<<20)/(2*ts.nr*m*k))
	p.For(groups, minGroups, func(lo, hi int) {
		r0, r1 := ts.nr*lo, min(ts.nr*hi, n)
		for k0 := 0; k0 < kv; k0 += gemmKC {
			kb := min(gemmKC, kv-k0)
			acc := min(k0, 1)
			for m0 := 0; m0 < m; m0 += directMB {
				m1 := min(m0+directMB, m)
				for r := r0; r < r1; r += ts.nr {
					nr := min(ts.nr, r1-r)
					wp := unsafe.Pointer(&data[(r*k+k0)*es])
					for i0 := m0; i0 < m1; i0 += ts.mr {
						ts.tile(dt, min(ts.mr, m1-i0), nr, &x[i0*k+k0], 4*k, wp, k*es, kb, &out[i0*n+r], 4*n, acc)
					}
				}
			}
		}
		addKTail(out, x, dt, data, m, n, k, kv, r0, r1)
	})
}

// gemmPacked computes out = x · wᵀ like gemmDirect for large m: per worker, blocks of nc weight
// rows x gemmKC columns are converted to f32 once and reused by every activation tile.
func gemmPacked(p *Pool, out, x []float32, dt tensor.DType, data []byte, m, n, k int) {
	ts := gemmTiles()
	kv := k &^ (ts.lanes - 1)
	groups := (n + ts.nr - 1) / ts.nr
	minGroups := max(1, (1<<20)/(2*ts.nr*m*k)) // at least ~1 MFLOP per worker
	p.For(groups, minGroups, func(lo, hi int) {
		n0, n1 := ts.nr*lo, min(ts.nr*hi, n)
		bb := getF32(ts.nc * gemmKC)
		defer putF32(bb)
		buf := *bb
		for nb0 := n0; nb0 < n1; nb0 += ts.nc {
			nb := min(ts.nc, n1-nb0)
			for k0 := 0; k0 < kv; k0 += gemmKC {
				kb := min(gemmKC, kv-k0)
				for j := 0; j < nb; j++ {
					weightRow(buf[j*kb:(j+1)*kb], dt, data, k, nb0+j, k0, kb)
				}
				acc := min(k0, 1)
				for i0 := 0; i0 < m; i0 += ts.mr {
					mr := min(ts.mr, m-i0)
					for j0 := 0; j0 < nb; j0 += ts.nr {
						ts.f32[mr][min(ts.nr, nb-j0)](&x[i0*k+k0], 4*k, &buf[j0*kb], 4*kb, kb, &out[i0*n+nb0+j0], 4*n, acc)
					}
				}
			}
		}
		addKTail(out, x, dt, data, m, n, k, kv, n0, n1)
	})
}

// addKTail finishes out[i, r] for r in [r0, r1) after the vector kernels covered columns
// [0, kv): it clears the outputs when kv == 0, then adds the products of columns [kv, k)
// (fewer than 16) one by one, in column order.
func addKTail(out, x []float32, dt tensor.DType, data []byte, m, n, k, kv, r0, r1 int) {
	if kv == 0 {
		for i := 0; i < m; i++ {
			clear(out[i*n+r0 : i*n+r1])
		}
	}
	if kv == k {
		return
	}
	var tail [16]float32
	for r := r0; r < r1; r++ {
		weightRow(tail[:], dt, data, k, r, kv, k-kv)
		for i := 0; i < m; i++ {
			s := out[i*n+r]
			for l := kv; l < k; l++ {
				s += x[i*k+l] * tail[l-kv]
			}
			out[i*n+r] = s
		}
	}
}
