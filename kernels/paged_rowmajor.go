// This file runs a decode row's interleaved items (paged_interleave.go) in position order.
// Segment-major (chunkRowMajor): each page segment of a chunk is read by every item before the
// next segment, for the scores and again for the weighted values, with the same kernel calls
// per item as an item run alone (pagedAttentionTile). Position-major (chunkRowsZ, one or two
// query heads per KV head on AVX-512): kernels that compute every head's scores key row by key
// row and add every head's weighted values value row by value row, with the tile kernels'
// arithmetic. Either way each item's results are bit for bit those of its prefill tile. An
// item after item loop, which walked one head's columns of every row (a strided walk, at
// 40-62% of a stream's rate), was replaced by these (docs/kernels-float.md).
package kernels

import (
	"math"
	"slices"
	"sync"
	"unsafe"
)

// useRowsZ selects chunkRowsZ's kernels where they run (rowsZ); off, chunkRowMajor runs.
var useRowsZ = true

// chunkRowMajor runs positions p0..p0+AttnBlock-1 of items (one decode row's KV heads or
// sub-groups, m*sg score rows at most attnMaxGroup) over their K and V pools srcs (f32, or
// quantized: each segment dequantized into the srcs' scratch and used up at once); s holds
// m*sg*AttnBlock scores.
func chunkRowMajor(items []attnTile, p0 int, s []float32, srcs []kvSrc) {
	const B = AttnBlock
	a := &items[0]
	table, blockSize, stride, headDim, pos0 := a.table, a.blockSize, a.stride, a.headDim, a.pos0
	g := a.g
	scale := float32(1 / math.Sqrt(float64(headDim)))
	fast := attnAsm && !Reference && headDim%8 == 0
	nb := min(B, pos0+1-p0)
	for i0, seg := 0, 0; i0 < nb; i0 += seg {
		var r0 int
		seg, r0 = pageSeg(table, blockSize, p0+i0, nb-i0)
		for j := range items {
			kp, ks := srcs[2*j].seg(r0, seg, stride, headDim)
			attnScores(s[j*g*B+i0:], B, items[j].q, headDim, g, kp, ks, seg, headDim, scale)
		}
	}
	for j := range items {
		it := &items[j]
		onlineSoftmax(s[j*g*B:], B, nb, g, headDim, it.mx, it.sum, it.out, fast)
	}
	for i0, seg := 0, 0; i0 < nb; i0 += seg {
		var r0 int
		seg, r0 = pageSeg(table, blockSize, p0+i0, nb-i0)
		n0 := pos0 + 1 - p0 - i0
		for j := range items {
			vp, vs := srcs[2*j+1].seg(r0, seg, stride, headDim)
			attnPVRows(items[j].out, headDim, s[j*g*B+i0:], B, g, vp, vs, headDim, seg, n0, 0, fast)
		}
	}
}

// rowsPlan is what chunkRowsZ needs for one decode row's items on one worker: the query
// heads (a copy padded to a multiple of four when needed), each head's K column offset, and
// the P·V blocks of 64 columns in the order the passes run them.
type rowsPlan struct {
	q                [attnMaxGroup * 128]float32
	qp               *float32
	n4, hd           int
	koff             [attnMaxGroup]int
	ooff, poff, voff [2 * attnMaxGroup]int
	nblk             int
}

var rowsPlanPool = sync.Pool{New: func() any { return new(rowsPlan) }}

// rowsZ reports whether chunkRowsZ runs a's decode rows: AVX-512, f32, f16 or bf16 pools
// (the last two converted in the kernels' registers), head dims 64 and 128, and at most two query heads per KV head. With more, the tile kernels' scores,
// which load each key once for up to four heads, do less work per byte than attnQKRowsZ,
// and the segment-major chunks were faster (TinyLlama's 8 and Llama 3's 4 heads per KV head
// in BenchmarkPagedDecodeCold).
func (a *pagedArgs) rowsZ() bool {
	t := a.kv.Fmt.Type
	return useRowsZ && useAVX512 && attnAsm && !Reference && (t == KVF32 || t == KVF16 || t == KVBF16) &&
		(a.headDim == 64 || a.headDim == 128) && a.heads <= 2*a.kvHeads
}

// narrowRowsZ reports whether a's decode rows run chunkRowsZ over pool rows of 2 KiB or less.
// Split between workers by heads, each would read part of every row, and each core's
// prefetcher fetches the whole rows: on the Zen 5 VM a lone decode row over 1.5 KiB f16 rows
// (stories110M's heads) took 145 µs a layer on one worker and 250 on two
// (BenchmarkPagedDecodeColdKV), where f32 rows of 3 KiB took 260 and 219. So such a row
// runs on one worker.
func (a *pagedArgs) narrowRowsZ() bool {
	if !a.rowsZ() {
		return false
	}
	_, _, rb := a.kv.rowBase(a.kvHeads * a.headDim)
	return rb <= 2048
}

// rowBase returns the K and V pools' first rows and the bytes from one pool row to the next,
// for the position-major kernels (f32, f16 or bf16 pools; kvd values a row).
func (kv *KVLayer) rowBase(kvd int) (k, v unsafe.Pointer, rowBytes int) {
	if !kv.quantized() {
		return unsafe.Pointer(unsafe.SliceData(kv.K)), unsafe.Pointer(unsafe.SliceData(kv.V)), 4 * kvd
	}
	return unsafe.Pointer(unsafe.SliceData(kv.KQ)), unsafe.Pointer(unsafe.SliceData(kv.VQ)), kv.Fmt.RowBytes
}

// plan fills pl for the query heads h0..h0+n-1 of a decode row whose q starts at q (h0's).
// The P·V blocks are ordered by how many earlier blocks read the same K/V columns, then by
// those columns, so that each pass of up to six blocks reads the worker's columns of every
// row in address order (the heads of one KV head share its columns).
func (pl *rowsPlan) plan(q []float32, h0, n, group, hd, esize int) {
	const B = AttnBlock
	pl.hd, pl.n4 = hd, (n+3)/4
	pl.qp = &q[0]
	if n%4 != 0 {
		copy(pl.q[:n*hd], q[:n*hd])
		clear(pl.q[n*hd : 4*pl.n4*hd])
		pl.qp = &pl.q[0]
	}
	for u := range 4 * pl.n4 {
		pl.koff[u] = ((h0 + min(u, n-1)) / group) * hd * esize
	}
	type blk struct{ rank, o, p, v int }
	var bs [2 * attnMaxGroup]blk
	nb := 0
	for u := range n {
		for c := 0; c < hd; c += 64 {
			b := blk{o: (u*hd + c) * 4, p: u * B * 4, v: pl.koff[u] + c*esize}
			for _, e := range bs[:nb] {
				if e.v == b.v {
					b.rank++
				}
			}
			bs[nb] = b
			nb++
		}
	}
	slices.SortStableFunc(bs[:nb], func(x, y blk) int {
		if x.rank != y.rank {
			return x.rank - y.rank
		}
		return x.v - y.v
	})
	for i, b := range bs[:nb] {
		pl.ooff[i], pl.poff[i], pl.voff[i] = b.o, b.p, b.v
	}
	pl.nblk = nb
}

// chunkRowsZ is chunkRowMajor on the position-major AVX-512 kernels (a.rowsZ()): per page
// segment, one attnQKRowsZ call gives every head's scores key row by key row, and the P·V
// passes add every head's weighted values value row by value row. out is the items' output
// (head h0's row), kv the layer's pools (f32, f16 or bf16).
func chunkRowsZ(items []attnTile, pl *rowsPlan, p0 int, s, out []float32, kv *KVLayer) {
	const B = AttnBlock
	a := &items[0]
	table, blockSize, headDim, pos0 := a.table, a.blockSize, a.headDim, a.pos0
	kp, vp, rb := kv.rowBase(a.stride)
	g := a.g
	scale := float32(1 / math.Sqrt(float64(headDim)))
	nb := min(B, pos0+1-p0)
	for i0, seg := 0, 0; i0 < nb; i0 += seg {
		var r0 int
		seg, r0 = pageSeg(table, blockSize, p0+i0, nb-i0)
		qkRowsZ(headDim, kv.Fmt.Type, pl.qp, unsafe.Add(kp, r0*rb), rb, &pl.koff[0], pl.n4, &s[i0], 4*B, seg, scale)
	}
	for j := range items {
		it := &items[j]
		onlineSoftmax(s[j*g*B:], B, nb, g, headDim, it.mx, it.sum, it.out, true)
	}
	for i0, seg := 0, 0; i0 < nb; i0 += seg {
		var r0 int
		seg, r0 = pageSeg(table, blockSize, p0+i0, nb-i0)
		for b0 := 0; b0 < pl.nblk; b0 += 6 {
			pvRowsZ(min(6, pl.nblk-b0), kv.Fmt.Type, &out[0], &pl.ooff[b0], &s[i0], &pl.poff[b0], unsafe.Add(vp, r0*rb), rb, &pl.voff[b0], seg)
		}
	}
}

// pageSeg is the page segment that starts at position p: its length (at most left, up to the
// end of p's block) and its first pool row.
func pageSeg(table []int32, blockSize, p, left int) (seg, r0 int) {
	return min(left, blockSize-p%blockSize), int(table[p/blockSize])*blockSize + p%blockSize
}
