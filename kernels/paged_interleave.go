// This file runs a worker's share of one decode row's paged attention (several KV heads of
// the same query token) interleaved, chunk by chunk, instead of head after head. A pool row
// holds every KV head of a position (kvHeads*headDim values), so one head's keys are 256
// bytes every few kilobytes: read head after head, each head is a strided walk that the
// hardware prefetchers do not follow, bound by the latency of one miss after another. Run
// interleaved, the worker's heads of each position are one contiguous span, which is
// prefetched a chunk ahead. Each item still sees its chunks in the same order with the same
// kernels, so the results are bit for bit those of the items run one after another.
package kernels

import (
	"os"
	"unsafe"
)

// prefetchKV is false with LLMCLOUD_KV_PREFETCH=0 (to measure what the prefetch brings).
var prefetchKV = os.Getenv("LLMCLOUD_KV_PREFETCH") != "0"

// attnInterleaveRows bounds the score rows (items x heads per item) run interleaved: their
// softmax state sits in the scratch after the scores.
const attnInterleaveRows = attnMaxGroup

// decodeOnly reports whether every tile is one row (a batch of decode rows).
func decodeOnly(tiles []pagedTile) bool {
	for _, t := range tiles {
		if t.n != 1 {
			return false
		}
	}
	return true
}

// runRows runs the items of tiles lo..hi-1 (in run's order of tiles), so that each row's
// items run interleaved.
func (a *pagedArgs) runRows(lo, hi int) {
	per := a.kvHeads * a.nsub
	a.run(lo*per, hi*per)
}

// tileAt is the tile of the t-th tile's items: from both ends in turn (the first tile, the
// last, the second, ...), so that long and short tiles alternate.
func (a *pagedArgs) tileAt(t int) int {
	if t%2 == 1 {
		return len(a.tiles) - 1 - t/2
	}
	return t / 2
}

// decodeRun is how many items from it (below hi), of tile i, belong to that tile when it is one
// token (a decode row) and run interleaved: at least 1 for a decode row, 0 for a prefill tile.
func (a *pagedArgs) decodeRun(i, it, hi int) int {
	perTile := a.kvHeads * a.nsub
	t := it / perTile
	if a.tiles[i].n != 1 {
		return 0
	}
	m := 1
	for it+m < hi && (it+m)/perTile == t && (m+1)*a.sg <= attnInterleaveRows {
		m++
	}
	return m
}

// runInterleaved runs items r..r+m-1 of tile i (one token), chunk by chunk, reading each chunk
// in position order (paged_rowmajor.go: chunkRowsZ's kernels, else every item per page
// segment); for chunkRowMajor on f32 pools the K and V rows of the next chunk are prefetched
// over the items' heads first (of the first chunk too, before it). scratch holds the scores
// of every item and then the softmax state of all (AttentionScratch(attnInterleaveRows)).
func (a *pagedArgs) runInterleaved(i, r, m int, scratch, qbuf []float32) {
	const B = AttnBlock
	qd, kvd, hd := a.heads*a.headDim, a.kvHeads*a.headDim, a.headDim
	group := a.heads / a.kvHeads
	tl := a.tiles[i]
	row := a.rows[tl.first]
	var items [attnInterleaveRows]attnTile
	var srcs [2 * attnInterleaveRows]kvSrc
	state := scratch[attnMaxGroup*B:] // after every item's scores
	for j := 0; j < m; j++ {
		kv, sub := (r+j)/a.nsub, (r+j)%a.nsub
		h0 := kv*group + sub*a.sg
		qo := tl.first*qd + h0*hd
		ks, vs := &srcs[2*j], &srcs[2*j+1]
		ks.at(a.kv.K, a.kv.KQ, a.kv.Fmt, kv*hd)
		vs.at(a.kv.V, a.kv.VQ, a.kv.Fmt, kv*hd)
		if a.kv.quantized() { // one segment's scratch, used up inside each chunk call
			ks.buf, vs.buf = qbuf, qbuf
		}
		items[j] = attnTile{out: a.out[qo : qo+a.sg*hd], q: a.q[qo : qo+a.sg*hd], ldq: qd, nt: 1, g: a.sg,
			pos0: row.Pos, table: row.Table, blockSize: a.blockSize, stride: kvd, headDim: hd,
			mx: state[2*j*a.sg : (2*j+1)*a.sg], sum: state[(2*j+1)*a.sg : (2*j+2)*a.sg]}
		items[j].begin()
	}
	// The items' columns: KV heads r/nsub .. (r+m-1)/nsub.
	c0, c1 := (r/a.nsub)*hd, ((r+m-1)/a.nsub+1)*hd
	nPos := row.Pos + 1
	var pl *rowsPlan
	if a.rowsZ() {
		pl = rowsPlanPool.Get().(*rowsPlan)
		// The plan goes back to its pool without its pointer to the activations.
		defer func() { pl.qp = nil; rowsPlanPool.Put(pl) }()
		h0 := r * a.sg // items r.. cover query heads h0.. in order
		esize := 4
		if a.kv.quantized() { // f16 or bf16 (rowsZ)
			esize = a.kv.Fmt.RowBytes / kvd
		}
		pl.plan(a.q[tl.first*qd+h0*hd:], h0, m*a.sg, group, hd, esize)
	}
	// The software prefetch helps the segment-major chunks (and helped the item-major ones
	// before them); chunkRowsZ's in-order reads go 3-8% faster without it
	// (BenchmarkPagedDecodeCold).
	pf := !a.kv.quantized() && prefetchKV && pl == nil
	if pf {
		a.prefetch(a.kv.K, row.Table, 0, min(B, nPos), c0, c1)
		a.prefetch(a.kv.V, row.Table, 0, min(B, nPos), c0, c1)
	}
	for p0 := 0; p0 < nPos; p0 += B {
		if pf {
			a.prefetch(a.kv.K, row.Table, p0+B, min(p0+2*B, nPos), c0, c1)
			a.prefetch(a.kv.V, row.Table, p0+B, min(p0+2*B, nPos), c0, c1)
		}
		if pl != nil {
			h0 := r * a.sg
			chunkRowsZ(items[:m], pl, p0, scratch[:attnMaxGroup*B:attnMaxGroup*B], a.out[tl.first*qd+h0*hd:], &a.kv)
			continue
		}
		chunkRowMajor(items[:m], p0, scratch[:attnMaxGroup*B:attnMaxGroup*B], srcs[:2*m])
	}
	for j := 0; j < m; j++ {
		items[j].end()
	}
}

// prefetch asks the caches for columns c0..c1-1 of the f32 pool rows of positions p0..p1-1.
func (a *pagedArgs) prefetch(pool []float32, table []int32, p0, p1, c0, c1 int) {
	bs, kvd := a.blockSize, a.kvHeads*a.headDim
	for p := p0; p < p1; {
		seg := min(p1-p, bs-p%bs)
		r0 := int(table[p/bs])*bs + p%bs
		prefetchRows((*byte)(unsafe.Pointer(&pool[r0*kvd+c0])), 4*kvd, seg, 4*(c1-c0))
		p += seg
	}
}
